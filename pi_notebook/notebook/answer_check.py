"""Making a run end with its answer stated, not left in a tool output.

A small model often runs the right code, sees the number in the tool's output, and ends the
run with no text, or with text that skips the form the user asked for. When a run that called
tools ends that way, the notebook asks once more (one follow-up message per run, shown in the
run view like any follow-up): state the final answer from the outputs, in the form asked for.

A small model also answers a question about data at once, from memory, with numbers it never
computed (the count of rows of a file it has not opened). When the prompt names data the kernel
can reach (a data file in its working directory, or a table or array in its namespace) and the
run ends with a reply that states a number, without any tool call, while a tool that runs code
is offered, the notebook asks once to compute them with that tool before answering. A chat
question ("write a list", "what is the capital of France") is never sent back.

After code ran, a reply to such a prompt that states numbers right after the code failed, or a
number the model was not shown (in a tool's output, the prompt or the notebook's messages other
than the data preview; allowing for rounding, and for a fraction given as a percentage), is
asked once to compute it: a small model told "(no output)", or shown a
traceback, still states a value it never saw.

The form is what the prompt gives after the word "format" and a colon (``Answer in this
format: Total: <number>``); the answer has it when every literal part of it, the text outside
placeholders such as ``[value]``, ``<number>`` or ``{x}``, appears in the reply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from .data_preview import CUSTOM_TYPE as PREVIEW_TYPE
from .data_preview import named_data_files

__all__ = [
    "CODE_TOOLS",
    "answer_format",
    "code_tool_among",
    "failed_code_text",
    "follow_up_text",
    "lacks_answer",
    "refers_to_data",
    "shown_texts",
    "states_numbers",
    "unchecked_numbers_text",
    "unsupported_numbers",
    "unsupported_numbers_text",
]

CODE_TOOLS = ("insert_cell", "run_python", "run_cell")
"""Tools that run code, in the order the check names them (cells first when a notebook is
open)."""
_NAME = re.compile(r"[A-Za-z_]\w*")
_STATED_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?!\w)")
"""A number standing alone, as a reply may write it (``1,234``, ``26.38``, ``1.2e-05``), not
digits inside a word (``alpha000``)."""
_OUTPUT_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
"""A number as code prints it (``30.45``, ``1.2e-05``; the sign does not matter here)."""

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
    """Whether ``reply`` states no answer: it is empty, leaves out a part of ``form``, or
    copies one of its placeholders (``@cars[count]`` for ``@cars[count]``) where a value goes."""
    if not reply.strip():
        return True
    if form is None:
        return False
    if any(part not in reply for part in _literal_parts(form)):
        return True
    return any(placeholder in reply for placeholder in _PLACEHOLDER.findall(form))


def follow_up_text(form: str | None) -> str:
    """The follow-up that asks for the answer."""
    text = (
        "State your final answer now, using the results in the tool outputs above "
        "(do not guess numbers you have not seen)."
    )
    if form is None:
        return text
    placeholders = list(dict.fromkeys(_PLACEHOLDER.findall(form)))
    if not placeholders:
        return text + f" Give it in exactly this format:\n{form}"
    values = "value" if len(placeholders) == 1 else "values"
    inner = [p[1:-1].strip() for p in placeholders if p.startswith("[")]
    if len(inner) == len(placeholders) and all(inner):
        # "[count] replaced by your value" reads as: drop the brackets too; they are the form
        named = " and ".join(inner)
        how = f"keeping the square brackets, with {named} inside them replaced by your {values}"
    else:
        how = f"with {' and '.join(placeholders)} replaced by your {values}"
    return text + f" Give it in exactly this format, {how}:\n{form}"


def code_tool_among(offered: set[str] | frozenset[str]) -> str | None:
    """The tool the numbers check asks for: the first of :data:`CODE_TOOLS` offered."""
    return next((name for name in CODE_TOOLS if name in offered), None)


def states_numbers(reply: str) -> bool:
    """Whether ``reply`` states a number (one standing alone, not digits inside a word)."""
    return _STATED_NUMBER.search(reply) is not None


def refers_to_data(prompt: str, namespace: Mapping[str, Any], cwd: Path = Path()) -> bool:
    """Whether ``prompt`` names data the kernel can reach: a data file that exists (relative to
    ``cwd``, the kernel's working directory by default), or a variable of ``namespace`` holding
    a table or an array (it has a ``shape``)."""
    if named_data_files(prompt, cwd):
        return True
    return any(_has_shape(namespace.get(word)) for word in set(_NAME.findall(prompt)))


def _has_shape(value: Any) -> bool:
    try:
        return hasattr(value, "shape")
    except Exception:  # a property that raises something else: not a table to check against
        return False


def unchecked_numbers_text(code_tool: str) -> str:
    """The follow-up for numbers stated without running any code."""
    how = " with run set to true" if code_tool == "insert_cell" else ""
    # The guessed reply itself is not sent again (see ``RunDriver.on_context``), so the
    # words stand without it.
    return (
        "No code has run yet, so an answer now would not come from the data. "
        f"Call {code_tool}{how} now to compute the answer from the data, then give your answer."
    )


def _shown_by(written: str, outputs: list[float]) -> bool:
    """Whether the number ``written`` is one of ``outputs`` rounded as it is written, or one of
    them as a percentage."""
    try:
        number = Decimal(written)
    except InvalidOperation:  # "1,2,3" read as one number: a list, not a value
        return True
    value = float(number)
    exponent = number.as_tuple().exponent
    slack = 0.5 * 10.0 ** (exponent if isinstance(exponent, int) else 0) + 1e-12
    return any(abs(o - value) <= slack or abs(o * 100 - value) <= slack for o in outputs)


def shown_texts(messages: Sequence[Any]) -> list[str]:
    """The texts in ``messages`` a stated number may come from: the prompts, the notebook's
    messages and the tool results that did not fail. Not the data preview (its first rows are
    no answer to a question about the whole table), nor a traceback (its line numbers are no
    value)."""
    texts = []
    for message in messages:
        role = getattr(message, "role", None)
        if role == "assistant" or (role == "toolResult" and getattr(message, "is_error", False)):
            continue
        if getattr(message, "custom_type", None) == PREVIEW_TYPE:
            continue
        content = getattr(message, "content", None)
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(b.text for b in content if isinstance(getattr(b, "text", None), str))
    return texts


def unsupported_numbers(reply: str, shown: list[str]) -> list[str]:
    """The numbers standing alone in ``reply`` that none of the texts ``shown`` to the model
    has (rounded as the reply writes them, or as a percentage), in the order written."""
    values = [float(m) for text in shown for m in _OUTPUT_NUMBER.findall(text)]
    numbers = dict.fromkeys(_STATED_NUMBER.findall(reply))
    return [n for n in numbers if not _shown_by(n.replace(",", ""), values)]


def unsupported_numbers_text(numbers: list[str], code_tool: str) -> str:
    """The follow-up for numbers that no output of the code shows."""
    listed = ", ".join(numbers[:5])
    how = " with run set to true" if code_tool == "insert_cell" else ""
    return (
        f"No output of the code you ran shows {listed}, so your reply does not come from the "
        f"data. Call {code_tool}{how} with code that prints the values you need, then give "
        "your answer from what it prints."
    )


def failed_code_text(code_tool: str) -> str:
    """The follow-up for numbers stated right after the code failed."""
    how = " with run set to true" if code_tool == "insert_cell" else ""
    return (
        "Your last code failed, so the numbers in your reply were not computed from the data. "
        f"Fix the code and call {code_tool}{how} again, then give your answer from what it "
        "prints."
    )
