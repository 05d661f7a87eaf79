"""``%%agent --wait`` as top-level ``await``.

A magic cannot await, and blocking the kernel's loop would freeze the run it waits for (and every
widget). So an input transformer rewrites the cell before IPython compiles it::

    %%agent --wait --model anthropic/claude-sonnet-4-5      get_ipython().run_cell_magic(
    Summarise {df_name}                             →           'agent', '--model …', 'Summarise …')
                                                            await pi_notebook.current().wait();

IPython then runs the cell as a coroutine on the kernel loop: the run streams, widgets stay
clickable, and "Run All" / nbclient move on only when the run is over. The trailing ``;`` keeps
the awaited value out of the cell's output.
"""

from __future__ import annotations

import shlex

__all__ = ["WAIT_FLAG", "rewrite_wait_cell"]

WAIT_FLAG = "--wait"


def rewrite_wait_cell(lines: list[str]) -> list[str]:
    """IPython ``input_transformers_cleanup`` hook: rewrite ``%%agent --wait`` cells."""
    if not lines:
        return lines
    first = lines[0].strip()
    if not first.startswith("%%agent"):
        return lines
    head = first[len("%%agent") :]
    if head and not head[0].isspace():
        return lines  # another magic, e.g. %%agentic
    try:
        tokens = shlex.split(head)
    except ValueError:
        return lines  # let the magic itself report the bad arguments
    if WAIT_FLAG not in tokens:
        return lines
    rest = shlex.join(t for t in tokens if t != WAIT_FLAG)
    body = "".join(lines[1:])
    return [
        f"get_ipython().run_cell_magic('agent', {rest!r}, {body!r})\n",
        "await __import__('pi_notebook').current().wait();\n",
    ]
