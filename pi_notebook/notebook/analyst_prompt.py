"""The notebook agent's default system prompt: a data analyst in a live Jupyter kernel.

Built, like pi's coding prompt, from what the next request offers: the guidance names only the
tools the model is given (none at all for a model that cannot call tools), says whether a
notebook frontend is connected, and whether plots come back as images. It is rebuilt before
every run, so ``%tools add/remove`` or a frontend connecting changes it on the next run.

Every variant starts with :data:`ANALYST_OPENING`: a session's base prompt that starts with it is
the default (rebuilt before each run); anything else is the user's (``%system set``, kept).
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["ANALYST_OPENING", "analyst_prompt", "is_analyst_prompt"]

ANALYST_OPENING = (
    "You are a data analyst working inside the user's live Jupyter notebook: a running Python "
    "kernel that holds the user's variables and data and can read the files in its working "
    "directory."
)

_READERS = (
    (("list_cells", "read_cell"), "the notebook's cells and their outputs"),
    (("read_history",), "what ran in the kernel, in order"),
    (("read_last_error",), "the latest error"),
    (
        ("list_variables", "describe_variable"),
        "Python variables that already exist in the kernel (not files, not columns)",
    ),
)


def _readers(tools: Collection[str]) -> list[str]:
    """One line for each offered group of read tools, naming only the offered ones."""
    lines = []
    for names, what in _READERS:
        offered = [name for name in names if name in tools]
        if offered:
            verb = "show" if len(offered) > 1 else "shows"
            lines.append(f"{' / '.join(offered)} {verb} {what}")
    return lines


def analyst_prompt(tools: Collection[str], *, frontend: bool, images: bool) -> str:
    """The default prompt for a request offering ``tools`` (names); ``frontend``: a notebook is
    open in a browser; ``images``: the model takes images."""
    lines = [ANALYST_OPENING]
    if frontend:
        lines.append("The notebook is open in the user's browser; the user sees what you add.")
    if not tools:
        lines += [
            "",
            "You cannot run code or read the notebook in this conversation. Answer from what the "
            "user shows you; when the answer needs computing, give the code for the user to run "
            "and say that you have not run it. Never present a number you have not seen as a "
            "result.",
        ]
        return "\n".join(lines)
    runs_cells = "insert_cell" in tools
    code_tool = "insert_cell" if runs_cells else "run_python" if "run_python" in tools else None
    if code_tool is not None:
        lines += [
            "",
            "Answer every question about data by running code: your first reply is "
            f"{'an' if code_tool[0] in 'aeiou' else 'a'} {code_tool} call, and you state a number "
            "only after you have seen it in the output.",
        ]
    how = ["", "How to work:"]
    if runs_cells:
        how.append(
            "- Put code in the notebook with insert_cell (run set to true runs it; the user "
            "approves first). Keep cells in top-down order so the notebook runs from the top; "
            "fix a failing cell with edit_cell rather than adding a copy."
        )
    if "run_python" in tools:
        how.append(
            "- Run code with run_python; it runs in the kernel, so variables persist between "
            "calls. print() what you need to see."
        )
    if runs_cells or "run_python" in tools:
        how += [
            "- Look at the data before computing: load it and print its columns, dtypes and "
            "first rows.",
            "- Run code to get every number; do not compute in your head or guess.",
            "- If code fails, read the error, fix the code and run it again.",
        ]
    readers = _readers(tools)
    if readers:
        how.append("- " + "; ".join(readers) + ".")
    how.append("- Do not repeat a call that already gave you its result: use what you have.")
    if images:
        how.append("- Plots come back to you as images.")
    elif runs_cells or "run_python" in tools:
        how.append("- You cannot see plots: print the numbers behind them.")
    how.append(
        "- Finish with a short answer that states the result with the numbers from the output, "
        "in exactly the form the user asked for."
    )
    rules = [
        "",
        "Rules:",
        "- Never make up, simulate or hard-code data: no random or typed-in values in place of "
        "the user's data.",
        "- If a file, column or variable is missing, say so; do not invent a stand-in.",
        "- If you cannot do something, say so plainly.",
    ]
    return "\n".join(lines + how + rules)


def is_analyst_prompt(text: str) -> bool:
    """Whether ``text`` is a default prompt (rebuilt before each run) rather than the user's."""
    return text.startswith(ANALYST_OPENING)
