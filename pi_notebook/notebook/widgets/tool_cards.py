"""The run view's cards of tool calls while they run: arguments, progress, the approval asked
for; a finished call leaves its card as a transcript item (``tool_result``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from .items import (
    PROGRESS_CHARS,
    args_text,
    content_images,
    content_text,
    display_bundle,
    tool_result_item,
)
from .protocol import ApprovalPreview, ApprovalState, RunningTool, ToolApproval, ToolResultItem

__all__ = ["ToolCards"]


class ToolCards:
    """The running tool calls by id (``running``, the ``running_tools`` trait), with what the
    cards need besides: when each started, the previews of approvals, the whole text of results
    cut in state. ``mark`` is told which traits changed."""

    def __init__(self, clock: Callable[[], float], mark: Callable[..., None]) -> None:
        self._clock = clock
        self._mark = mark
        self.running: dict[str, RunningTool] = {}
        self.finished: set[str] = set()
        """The calls whose cards became results (a late event for them is ignored)."""
        self.previews: dict[str, ApprovalPreview] = {}
        self._started: dict[str, float] = {}
        self._full_results: dict[str, str] = {}

    def open(self, tool_call_id: str, tool_name: str, args: Mapping[str, Any]) -> RunningTool:
        tool: RunningTool = {
            "tool_call_id": tool_call_id,
            "tool_name": tool_name,
            "args": args_text(dict(args)),
            "started_at": time.time_ns() // 1_000_000,
            "progress": "",
            "progress_bundle": None,
            "progress_images": [],
            "approval": None,
        }
        self.running[tool_call_id] = tool
        self._started.setdefault(tool_call_id, self._clock())
        return tool

    def progress(self, event: Any) -> None:
        """A ``tool_execution_update``: the end of its text, its display bundle and images."""
        tool = self.running.get(event.tool_call_id)
        if tool is None:
            tool = self.open(event.tool_call_id, event.tool_name, event.args)
        partial = event.partial_result
        content = getattr(partial, "content", None)
        blocks = [b.model_dump(mode="json", by_alias=True) for b in content or ()]
        text = content_text(blocks)
        updated = dict(tool)
        updated["progress"] = text[-PROGRESS_CHARS:]
        updated["progress_bundle"] = display_bundle(getattr(partial, "details", None))
        updated["progress_images"] = content_images(blocks)
        self.running[event.tool_call_id] = cast(RunningTool, updated)
        self._mark("running_tools")

    def timeout(self, tool_call_id: str) -> float | None:
        """The timeout of the approval a running call's card shows (None: none)."""
        tool = self.running.get(tool_call_id)
        return tool["approval"]["timeout"] if tool and tool["approval"] else None

    def set_approval(
        self,
        tool_call_id: str,
        state: ApprovalState,
        timeout: float | None,
        reason: str = "",
        *,
        review: bool = False,
    ) -> None:
        tool = self.running.get(tool_call_id)
        if tool is None:
            return
        approval: ToolApproval = {
            "state": state,
            "timeout": timeout,
            "reason": reason,
            "preview": self.previews.get(tool_call_id),
            "review": review,
        }
        updated = dict(tool)
        updated["approval"] = approval
        self.running[tool_call_id] = cast(RunningTool, updated)
        self._mark("running_tools", "status")

    def finish(
        self,
        item_id: str,
        tool_call_id: str,
        tool_name: str,
        content: object,
        details: object,
        is_error: bool,
    ) -> ToolResultItem:
        """Close a call's card: its result as the transcript item ``item_id``."""
        tool = self.running.pop(tool_call_id, None)
        started = self._started.pop(tool_call_id, None)
        duration = None if started is None else round((self._clock() - started) * 1000)
        item, text = tool_result_item(
            item_id,
            tool_call_id,
            tool_name,
            content,
            details,
            is_error,
            duration,
            tool["approval"] if tool is not None else None,
        )
        if item["text_length"] > len(item["text"]):
            self._full_results[tool_call_id] = text
        self.finished.add(tool_call_id)
        self._mark("running_tools")
        return item

    def full_result(self, tool_call_id: str) -> str | None:
        """The whole text of a result whose item holds it cut (None: the item has it all)."""
        return self._full_results.get(tool_call_id)
