"""Input rewriting that the pi_notebook magics need before IPython compiles a cell.

1. ``%%agent --wait`` as top-level ``await``.

A magic cannot await, and blocking the kernel's loop would freeze the run it waits for (and every
widget). So an input transformer rewrites the cell before IPython compiles it::

    %%agent --wait --model anthropic/claude-sonnet-4-5      get_ipython().run_cell_magic(
    Summarise {df_name}                             →           'agent', '--model …', 'Summarise …')
                                                            await pi_notebook.current().wait();

IPython then runs the cell as a coroutine on the kernel loop: the run streams, widgets stay
clickable, and "Run All" / nbclient move on only when the run is over. The trailing ``;`` keeps
the awaited value out of the cell's output.

2. Waiting for ``%model`` and friends. ``%model``, ``%compact``, ``%fork`` and ``%label`` go
through the agent's queue; when nothing is queued before them they start at once, and a
top-level line of theirs is followed by ``await pi_notebook.current().settled()``, so the cell
ends (and code after the line runs) once they are done — ``%model X`` then code that reads the
harness sees model X. Behind a streaming run ``settled()`` returns at once: they wait their turn.

3. Questions to the agent. IPython reads a line ending in ``?`` as a help request (``obj?``),
so ``%steer why is it slow?`` would look up an object named ``slow``. Lines of the text-taking
magics (``%steer``, ``%follow_up``, ``%compact``) are turned into explicit
``run_line_magic`` calls first, so their text reaches the magic as typed.

4. An empty ``%%agent`` cell. IPython refuses a cell magic whose body is empty with its own
message before the magic runs; a blank body reaches the magic. Both get :data:`EMPTY_PROMPT`:
the empty cell is rewritten into raising that ``UsageError`` (shown as one line, no traceback).
"""

from __future__ import annotations

import shlex

__all__ = [
    "EMPTY_PROMPT",
    "QUEUED_MAGICS",
    "SETTLE_LINE",
    "TEXT_MAGICS",
    "WAIT_FLAG",
    "rewrite_input",
    "rewrite_queued_magics",
    "rewrite_text_magics",
    "rewrite_wait_cell",
]

WAIT_FLAG = "--wait"
TEXT_MAGICS = ("steer", "follow_up", "compact")
QUEUED_MAGICS = ("model", "compact", "fork", "label", "verify")
SETTLE_LINE = "await __import__('pi_notebook').current().settled()\n"
EMPTY_PROMPT = "The cell is empty: write the prompt below %%agent."


def rewrite_input(lines: list[str]) -> list[str]:
    """The ``input_transformers_cleanup`` hook the extension installs."""
    return rewrite_text_magics(rewrite_queued_magics(rewrite_wait_cell(lines)))


def rewrite_queued_magics(lines: list[str]) -> list[str]:
    """Follow each top-level ``%model``/``%compact``/``%fork``/``%label`` line with
    :data:`SETTLE_LINE` (see above); help requests (``%fork?``, not ``%compact why?``) are
    left alone."""
    if not lines or lines[0].lstrip().startswith("%%"):
        return lines
    out: list[str] = []
    for line in lines:
        out.append(line)
        name = line.rstrip("\n").partition(" ")[0]
        if (
            name.startswith("%")
            and name[1:] in QUEUED_MAGICS
            and not line.rstrip().endswith("\\")
            and (name[1:] in TEXT_MAGICS or not line.rstrip().endswith("?"))
        ):
            if not line.endswith("\n"):
                out[-1] = line + "\n"
            out.append(SETTLE_LINE)
    return out


def rewrite_text_magics(lines: list[str]) -> list[str]:
    """``%steer TEXT?`` → ``get_ipython().run_line_magic('steer', 'TEXT?')`` (see above)."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its own business
    out = []
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        name, _, rest = stripped.rstrip("\n").partition(" ")
        if name.startswith("%") and not name.startswith("%%") and name[1:] in TEXT_MAGICS:
            line = f"{indent}get_ipython().run_line_magic({name[1:]!r}, {rest!r})\n"
        out.append(line)
    return out


def rewrite_wait_cell(lines: list[str]) -> list[str]:
    """Rewrite ``%%agent --wait`` cells into a magic call plus an ``await`` (and an empty
    ``%%agent`` cell into raising :data:`EMPTY_PROMPT`)."""
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
    if not "".join(lines[1:]).strip():
        return [f"raise __import__('IPython').core.error.UsageError({EMPTY_PROMPT!r}) from None\n"]
    if WAIT_FLAG not in tokens:
        return lines
    rest = shlex.join(t for t in tokens if t != WAIT_FLAG)
    body = "".join(lines[1:])
    return [
        f"get_ipython().run_cell_magic('agent', {rest!r}, {body!r})\n",
        "await __import__('pi_notebook').current().wait();\n",
    ]
