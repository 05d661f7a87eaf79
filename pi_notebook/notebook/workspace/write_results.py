"""The pieces the write tools' results are made of: a text result with the change it records
(``details["notebook"]``), a source in a code fence, a long text cut to size."""

from __future__ import annotations

from typing import Any

from ...agent.tools import AgentToolResult
from ...ai.types import TextContent

__all__ = ["MAX_TEXT", "bounded", "fence", "text_result"]

MAX_TEXT = 8_000
"""The longest text of a cell's run sent back to the model."""


def fence(source: str, language: str = "python") -> str:
    return f"```{language}\n{source.rstrip()}\n```"


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more]"


def text_result(text: str, notebook: dict[str, Any] | None = None) -> AgentToolResult:
    return AgentToolResult(
        content=[TextContent(text=text)],
        details={"notebook": notebook} if notebook is not None else None,
    )
