"""Running one of the small live checks of ``tests/golden/pi-1.6/sessions`` with the real pi 1.6
(Node 22 from its ``node_modules``; tests that use it are marked ``pi_node``)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.paths import GOLDEN

PI16 = GOLDEN / "pi-1.6" / "sessions"
NODE = PI16 / "node_modules" / ".bin" / "node"


def run_pi(script: str, *args: object) -> Any:
    """``node script args…`` in that folder; the JSON it printed (skips without pi 1.6)."""
    if not NODE.exists():
        pytest.skip("pi 1.6 is not installed (npm ci in tests/golden/pi-1.6/sessions)")
    done = subprocess.run(
        [str(NODE), str(PI16 / script), *map(str, args)],
        check=True,
        cwd=PI16,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(done.stdout)
