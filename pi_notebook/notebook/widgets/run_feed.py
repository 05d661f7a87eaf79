"""The run as its agent events tell it: what the run view shows, kept apart from the widget.

:class:`RunFeed` turns each agent event into the view's state: transcript items and the reply in
progress (:mod:`.run_transcript`), tool cards (:mod:`.tool_cards`) and the approvals asked on them
(:mod:`.run_approvals`), the header (:mod:`.run_header`), the messages queued for the run, and how
the run stands (:meth:`RunFeed.status`). It tells the view which synced traits changed
(``mark``); the few effects that are the widget's own go to the hooks it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ...ai.types import Model
from .items import assistant_item, content_text, message_json, note_item, user_item
from .protocol import Origin, QueuedMessage, RunStatus, TranscriptItem
from .run_approvals import Approvals
from .run_header import HeaderState, budget_rows
from .run_transcript import Transcript
from .tool_cards import ToolCards

__all__ = ["RunFeed"]


class RunFeed:
    """The state of one view's runs, fed with agent events (:meth:`handle`).

    ``mark(*names)`` is told which synced traits to refresh; ``started()`` when a run starts,
    ``ended(status)`` when its ``agent_end`` arrives, ``stopped(reason)`` when a budget stopped
    it. ``version`` grows whenever the text rendition would change.
    """

    def __init__(
        self,
        *,
        model: Model | None,
        thinking_level: str,
        clock: Callable[[], float],
        mark: Callable[..., None],
        started: Callable[[], None],
        ended: Callable[[RunStatus], None],
        stopped: Callable[[str], None],
    ) -> None:
        self._mark = mark
        self._started = started
        self._ended = ended
        self._stopped = stopped
        self.transcript = Transcript()
        self.cards = ToolCards(clock, mark)
        self.approvals = Approvals(self.cards, mark)
        self.head = HeaderState(model, thinking_level)
        self.queued: list[QueuedMessage] = []
        self.stalled = 0
        """Milliseconds the model request has been silent (0: data flows)."""
        self.terminal: RunStatus | None = None
        """How the last run ended; None while one is under way."""
        self.version = 0
        self._replies_this_run = 0
        self._last_reply_stamp: object = None
        self._budget_stop: str | None = None

    def handle(self, event: Any) -> None:
        """Take one agent event; unknown types (e.g. harness events) are ignored."""
        handler = self._handlers.get(getattr(event, "type", None))
        if handler is not None:
            handler(self, event)

    def status(self) -> RunStatus:
        if self.terminal is not None:
            return self.terminal
        if self.approvals.pending:
            return "awaiting_approval"
        if self.transcript.live_id is not None:
            return "streaming"
        if self.cards.running:
            return "running_tools"
        return "waiting"

    def append(self, item: TranscriptItem) -> None:
        self.transcript.append(item)
        self.version += 1
        self._mark("messages")

    def finish_tool(
        self, tool_call_id: str, tool_name: str, content: object, details: object, is_error: bool
    ) -> None:
        """Turn a tool call's card into its result item."""
        item_id = self.transcript.new_id()
        self.append(self.cards.finish(item_id, tool_call_id, tool_name, content, details, is_error))

    def set_stalled(self, stalled_ms: int) -> None:
        if stalled_ms != self.stalled:
            self.stalled = stalled_ms
            self.version += 1
            self._mark("stalled_ms")

    def end(self, status: RunStatus) -> None:
        """The run is over: open questions are refused, the queue and the reply in progress
        dropped."""
        self.approvals.settle(False, "The run ended.")
        self.terminal = status
        self.queued.clear()
        self.transcript.drop_reply()
        self.stalled = 0
        self.version += 1
        self._mark(
            "status", "current", "queued", "controls", "header", "running_tools", "stalled_ms"
        )

    # --- events ----------------------------------------------------------------------------------

    def _on_agent_start(self, _event: Any) -> None:
        self.terminal = None
        self._replies_this_run = 0
        self._started()
        self._mark("status", "controls")

    def _on_message_start(self, event: Any) -> None:
        if getattr(event.message, "role", None) != "assistant":
            return
        self.transcript.start_reply()
        self._mark("current", "status")

    def _on_message_update(self, event: Any) -> None:
        delta = event.assistant_message_event
        if delta.type in ("start", "done", "error"):
            return
        if self.stalled:  # data flows (the LLM layer says so too, a moment later)
            self.stalled = 0
            self._mark("stalled_ms")
        self.transcript.update_reply(delta)
        self._mark("current")

    def _on_message_end(self, event: Any) -> None:
        message = message_json(event.message)
        role = message.get("role")
        transcript = self.transcript
        if role == "assistant":
            self._add_reply(message, transcript.end_reply())
        elif role == "user":
            self.append(user_item(message, transcript.new_id(), self._origin(message)))
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            if call_id not in self.cards.finished:
                self.finish_tool(
                    call_id,
                    str(message.get("toolName", "")),
                    message.get("content"),
                    message.get("details"),
                    bool(message.get("isError")),
                )
        else:
            self.append(note_item(message, transcript.new_id()))
        self._mark("current", "status")

    def _on_tool_start(self, event: Any) -> None:
        if event.tool_call_id in self.cards.running:
            return  # listed in a review already: its card keeps the decision
        self.cards.open(event.tool_call_id, event.tool_name, event.args)
        self._mark("running_tools", "status")

    def _on_tool_update(self, event: Any) -> None:
        self.cards.progress(event)

    def _on_tool_end(self, event: Any) -> None:
        result = event.result
        blocks = [b.model_dump(mode="json", by_alias=True) for b in result.content]
        self.finish_tool(
            event.tool_call_id, event.tool_name, blocks, result.details, bool(event.is_error)
        )
        self._mark("status")

    def _on_agent_end(self, event: Any) -> None:
        messages = getattr(event, "messages", None) or []
        if messages:
            last = message_json(messages[-1])
            # A run that failed outside the stream reports its failure message only here.
            if (
                last.get("role") == "assistant"
                and last.get("stopReason") in ("error", "aborted")
                and not self._reply_recorded(last)
            ):
                self._add_reply(last, self.transcript.new_id())
        reason = self._last_reply_stop_reason()
        # a failed reply shows the model's error in the transcript: the view need not repeat it
        self._ended("aborted" if reason == "aborted" else "error" if reason == "error" else "done")

    def _on_budget_update(self, event: Any) -> None:
        self.head.budget = budget_rows(event)
        self._mark("header")
        if event.stopped and event.stopped != self._budget_stop:
            self._budget_stop = event.stopped
            self._stopped(event.stopped)

    def _on_compaction_start(self, event: Any) -> None:
        self.head.compaction_start(event)
        self._mark("header")

    def _on_compaction_end(self, event: Any) -> None:
        self.head.compaction_end(event)
        self._mark("header")

    _handlers: ClassVar[Mapping[object, Callable[[RunFeed, Any], None]]] = {
        "compaction_start": _on_compaction_start,
        "compaction_end": _on_compaction_end,
        "agent_start": _on_agent_start,
        "message_start": _on_message_start,
        "message_update": _on_message_update,
        "message_end": _on_message_end,
        "tool_execution_start": _on_tool_start,
        "tool_execution_update": _on_tool_update,
        "tool_execution_end": _on_tool_end,
        "agent_end": _on_agent_end,
        "budget_update": _on_budget_update,
    }

    # --- bookkeeping -----------------------------------------------------------------------------

    def _add_reply(self, message: Mapping[str, Any], item_id: str) -> None:
        item = assistant_item(message, item_id)
        self.append(item)
        self._replies_this_run += 1
        self._last_reply_stamp = message.get("timestamp")
        self.head.add_reply(item)
        self._mark("header")

    def _reply_recorded(self, message: Mapping[str, Any]) -> bool:
        return self._replies_this_run > 0 and self._last_reply_stamp == message.get("timestamp")

    def _last_reply_stop_reason(self) -> str | None:
        if self._replies_this_run == 0:
            return None
        for item in reversed(self.transcript.items):
            if item["kind"] == "assistant":
                return item["stop_reason"]
        return None

    def _origin(self, message: Mapping[str, Any]) -> Origin:
        text = content_text(message.get("content"))
        for index, queued in enumerate(self.queued):
            if queued["text"] == text:
                del self.queued[index]
                self._mark("queued")
                return queued["kind"]
        return "prompt" if self._replies_this_run == 0 else "user"
