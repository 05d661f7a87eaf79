"""``python -m pi_notebook.eval TASKS.jsonl --model PROVIDER/ID [--workers N] [--out DIR]``."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
