"""Making a run end with its answer stated, not left in a tool output.

A small model often runs the right code, sees the number in the tool's output, and ends the
run with no text, or with text that skips the form the user asked for. When a run that called
tools ends that way, the notebook asks once more (one follow-up message per run, shown in the
run view like any follow-up): state the final answer from the outputs, in the form asked for.

The form is what the prompt gives after the word "format" and a colon (``Answer in this
format: Total: <number>``); the answer has it when every literal part of it, the text outside
placeholders such as ``[value]``, ``<number>`` or ``{x}``, appears in the reply.
"""

from __future__ import annotations

import re

__all__ = ["answer_format", "follow_up_text", "lacks_answer"]

_FORMAT = re.compile(r"\bformat\b[^:\n]*:[ \t]*\n?(?P<form>.+?)(?:\n[ \t]*\n|\Z)", re.I | re.S)
_PLACEHOLDER = re.compile(r"\[[^\]]*\]|<[^>]*>|\{[^}]*\}")


def answer_format(prompt: str) -> str | None:
    """The answer format ``prompt`` asks for, or None."""
    found = list(_FORMAT.finditer(prompt))
    if not found:
        return None
    form = found[-1].group("form").strip()  # the last: a format is stated after the question
    return form or None


def _literal_parts(form: str) -> list[str]:
    parts = (part.strip() for part in _PLACEHOLDER.split(form))
    return [piece for part in parts for piece in part.split() if any(c.isalnum() for c in piece)]


def lacks_answer(reply: str, form: str | None) -> bool:
    """Whether ``reply`` states no answer: it is empty, or leaves out a part of ``form``."""
    if not reply.strip():
        return True
    if form is None:
        return False
    return any(part not in reply for part in _literal_parts(form))


def follow_up_text(form: str | None) -> str:
    """The follow-up that asks for the answer."""
    text = (
        "State your final answer now, using the results in the tool outputs above "
        "(do not guess numbers you have not seen)."
    )
    if form is not None:
        text += f" Give it in exactly this format:\n{form}"
    return text
