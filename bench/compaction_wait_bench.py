"""How long a compaction after a run holds back the cells that follow it (a real kernel under
nbclient, a scripted model with a 4,096-token window whose summary takes ``--summary-s``
seconds, as a small local model's does; its answers are instant).

A notebook of ``%%agent --wait`` cells, each followed by a plain cell, fills the window until
the harness compacts. Measured in the kernel with ``time.monotonic``:

- **the cell after the run**: from the run's reply to the start of the plain cell after its
  ``%%agent --wait`` (the longest over the notebook: the run that called for a compaction);
- **the next run**: from that plain cell to the next run's first request (the longest).

Two modes: the compaction after the run, in the background (the notebook's default), and
inside the run as pi orders it (``harness.defer_threshold_compaction = False``). It prints a
table and never passes or fails.

    python3 -m bench.compaction_wait_bench
    python3 -m bench.compaction_wait_bench --summary-s 5 --turns 12
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from bench.common import describe_environment, print_table

SETUP = """\
import asyncio, json, time
import pi_notebook
from pi_notebook.ai import Model, faux_assistant_message, register_faux_provider
from pi_notebook.harness.prompts import SUMMARIZATION_SYSTEM_PROMPT
model = Model(id="w", name="w", api="x", provider="x", context_window=4096, max_tokens=1024)
faux = register_faux_provider(provider="win", models=[model])
replies, requests, cells = [], [], []
async def step(context, options, state, model):
    if context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT:
        await asyncio.sleep({summary_s})
        return faux_assistant_message("## Goal\\nAnswer.\\n## Progress\\n" + "noted " * 40)
    requests.append(time.monotonic())
    replies.append(time.monotonic())
    return faux_assistant_message("An answer. " + "word " * 60)
faux.set_responses([step] * 200)
"""
DEFER = "pi_notebook.current().harness.defer_threshold_compaction = {defer}"
PROBE = "cells.append(time.monotonic())"
REPORT = """\
pi = pi_notebook.current()
await pi.wait()
compactions = sum(e.type == "compaction" for e in pi.session.get_entries())
after = [c - r for r, c in zip(replies, cells)]
next_run = [q - c for c, q in zip(cells, requests[1:])]
print(json.dumps({"compactions": compactions, "after": max(after), "next": max(next_run)}))
"""


def measure(turns: int, summary_s: float, defer: bool) -> dict[str, float]:
    cells = [
        "%load_ext pi_notebook\n%agent_context off",
        SETUP.format(summary_s=summary_s),
        "%model win/w",
        DEFER.format(defer=defer),
    ]
    filler = "word " * 400
    for i in range(turns):
        cells += [f"%%agent --wait\nQuestion {i}: {filler}", PROBE]
    cells.append(REPORT)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    with tempfile.TemporaryDirectory() as folder:
        os.environ["JPY_SESSION_NAME"] = str(Path(folder) / "bench.ipynb")
        NotebookClient(nb, timeout=600, resources={"metadata": {"path": folder}}).execute()
    last = nb.cells[-1].outputs[-1]
    text = last.get("text") or last.get("data", {}).get("text/plain", "")
    result: dict[str, float] = json.loads(text)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--summary-s", type=float, default=3.0)
    args = parser.parse_args()
    print(describe_environment(("ipykernel", "nbclient")))
    rows = []
    for label, defer in (("after the run (default)", True), ("inside the run (pi's order)", False)):
        figures = measure(args.turns, args.summary_s, defer)
        rows.append(
            [
                label,
                str(int(figures["compactions"])),
                f"{figures['after']:.2f} s",
                f"{figures['next']:.2f} s",
            ]
        )
    print_table(
        f"A compaction whose summary takes {args.summary_s:g} s, {args.turns} turns at 4k",
        ["compaction", "compactions", "cell after a --wait run waits", "next run waits"],
        rows,
        note="The longest wait of each kind over the notebook (the run that compacted).",
    )


if __name__ == "__main__":
    main()
