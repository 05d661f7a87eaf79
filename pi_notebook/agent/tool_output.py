"""What a tool result may carry into the conversation: bounded, and encodable as strict JSON.

Every tool's result passes through ``bound_result`` in the core (``tool_execution``), whatever
made it — a ``@tool`` function, a raw ``AgentTool``, a rich repr — because the result goes twice
where size and encoding matter: to the model (text it pays for) and into the session file (one
JSON line, written with ``allow_nan=False``). So:

- the text blocks together keep at most ``MAX_TOOL_TEXT_CHARS`` characters (head and tail, with
  a note saying how much was cut); lone surrogates become U+FFFD;
- an image larger than ``MAX_TOOL_IMAGE_CHARS`` of base64 is replaced by a note;
- ``details`` becomes strict JSON (NaN/inf → ``None``, bytes → a short description, other
  objects → their JSON form or ``repr``, keys → strings) and at most ``MAX_TOOL_DETAILS_CHARS``
  once encoded (else a note with a preview).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from ..ai.types import ImageContent, TextContent
from .tools import AgentToolResult

__all__ = [
    "MAX_TOOL_DETAILS_CHARS",
    "MAX_TOOL_IMAGE_CHARS",
    "MAX_TOOL_TEXT_CHARS",
    "bound_result",
    "bound_text",
    "json_safe",
]

MAX_TOOL_TEXT_CHARS: Final = 50_000
"""Characters of text one tool result sends to the model (``@tool``'s default bound too)."""
MAX_TOOL_IMAGE_CHARS: Final = 8_000_000
"""Base64 characters of one image (about 6 MB: more than any provider accepts)."""
MAX_TOOL_DETAILS_CHARS: Final = 2_000_000
"""JSON characters of ``details`` kept in the message (rich bundles for display are large)."""
_DEPTH: Final = 64
_REPR_CHARS: Final = 200


def bound_text(text: str, max_chars: int) -> str:
    """``text`` cut to about ``max_chars``: head and tail kept, a note in between."""
    if len(text) <= max_chars:
        return text
    tail = max_chars // 5
    head = max_chars - tail
    cut = len(text) - head - tail
    note = (
        f"\n\n[... {cut} characters cut: the output had {len(text)} characters,"
        f" the limit is {max_chars} ...]\n\n"
    )
    return f"{text[:head]}{note}{text[len(text) - tail :] if tail else ''}"


def _valid_unicode(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 joins surrogate pairs into their character; a lone one becomes U+FFFD
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def bound_result(result: AgentToolResult) -> AgentToolResult:
    """``result`` within the bounds of the module docstring (the same object if it already is)."""
    content = _bound_content(result.content)
    details = _bound_details(result.details)
    if content is result.content and details is result.details:
        return result
    return AgentToolResult(
        content=content, details=details, terminate=result.terminate, is_error=result.is_error
    )


def _bound_content(
    content: list[TextContent | ImageContent],
) -> list[TextContent | ImageContent]:
    changed = False
    total = 0
    for block in content:  # a loop, not sum() over a generator: this runs for every call
        if isinstance(block, TextContent):
            total += len(block.text)
    out: list[TextContent | ImageContent] = []
    for block in content:
        if isinstance(block, TextContent):
            text = _valid_unicode(block.text)
            if total > MAX_TOOL_TEXT_CHARS:  # each block keeps its share of the bound
                text = bound_text(text, max(200, MAX_TOOL_TEXT_CHARS * len(text) // total))
            if text is not block.text:
                block = block.model_copy(update={"text": text})
                changed = True
        elif isinstance(block, ImageContent) and len(block.data) > MAX_TOOL_IMAGE_CHARS:
            size = len(block.data) * 3 // 4
            block = TextContent(
                text=f"[an image ({block.mime_type}, about {size} bytes) was left out: "
                f"images are limited to {MAX_TOOL_IMAGE_CHARS * 3 // 4} bytes]"
            )
            changed = True
        out.append(block)
    return out if changed else content


def _bound_details(details: Any) -> Any:
    if details is None or (not details and type(details) in (dict, list)):
        return details  # within every bound (most tools' details): no encoding to measure
    safe = json_safe(details)
    try:
        encoded = json.dumps(safe, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # cannot happen for json_safe output; be sure
        return {"unencodable_details": str(exc)[:_REPR_CHARS]}
    if len(encoded) > MAX_TOOL_DETAILS_CHARS:
        return {
            "truncated": True,
            "note": f"details of {len(encoded)} JSON characters were cut to a preview "
            f"(the limit is {MAX_TOOL_DETAILS_CHARS})",
            "preview": encoded[:2_000],
        }
    return details if _same(safe, details) else safe


def _same(safe: Any, original: Any) -> bool:
    """Whether ``json_safe`` left ``original`` as it was (it returns the object unchanged)."""
    return safe is original


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as strict JSON data; ``value`` itself when it already is."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        fixed = _valid_unicode(value)
        return value if fixed is value else fixed
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= _DEPTH:
        return f"<nested deeper than {_DEPTH} levels>"
    if isinstance(value, Mapping):
        items = {
            (k if isinstance(k, str) else str(k)): json_safe(v, depth + 1) for k, v in value.items()
        }
        unchanged = type(value) is dict and all(
            isinstance(k, str) and items[k] is v for k, v in value.items()
        )
        return value if unchanged else items
    if isinstance(value, list | tuple):
        converted = [json_safe(v, depth + 1) for v in value]
        if type(value) is list and all(a is b for a, b in zip(converted, value, strict=True)):
            return value
        return converted
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    if isinstance(value, set | frozenset):
        return [json_safe(v, depth + 1) for v in value]
    if isinstance(value, BaseModel):
        try:
            return json_safe(value.model_dump(mode="json"), depth + 1)
        except Exception:
            pass
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return json_safe(dataclasses.asdict(value), depth + 1)
        except Exception:
            pass
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _REPR_CHARS else text[: _REPR_CHARS - 1] + "…"
