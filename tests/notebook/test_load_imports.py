"""``%load_ext pi_notebook`` stays light: what only a run, a tool call or a recording needs is
imported on first use (issue 15; the time itself is measured by ``bench/kernel_bench.py``).
Checked in a fresh interpreter with a real IPython shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DEFERRED = (
    "jsonschema",  # tool-argument validation: seconds where rfc3987-syntax is installed
    "pi_notebook.agent.validation",
    "pi_notebook.ai.cassette",  # PI_NOTEBOOK_RECORD / _REPLAY, %model --record / --replay
    "anywidget",  # the first run view
    "ipywidgets",
    "httpx",  # the first model request
)

PROBE = f"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "pi_notebook")
assert shell.find_cell_magic("agent") is not None
print(json.dumps([name for name in {DEFERRED!r} if name in sys.modules]))
"""


def test_load_ext_defers_what_only_a_run_needs(tmp_path: Path) -> None:
    env = {"JPY_SESSION_NAME": "probe.ipynb", "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env={**_base_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"imported by %load_ext: {loaded}"


def _base_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")
    return {name: os.environ[name] for name in keep if name in os.environ}
