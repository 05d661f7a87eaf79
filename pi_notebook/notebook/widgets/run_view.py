"""The live run view: one widget per agent run, fed with agent events.

``view.handle(event)`` takes every agent event (subscribe it: ``agent.subscribe(view.handle)``);
it is synchronous and cheap (a delta appends to a buffer and marks a trait dirty). Changes go to
the front end at most 10 times a second (:mod:`~pi_notebook.notebook.widgets.coalesce`), as one
append-only ``patch`` message each: the text added to the reply in progress (``current``), the
items added to ``messages``, the small traits that changed. A finished reply is not sent again:
the page promotes its ``current``. The traits always hold the whole state, for a late-joining
page and for a saved notebook. The protocol is in
:mod:`~pi_notebook.notebook.widgets.protocol`.

Buttons in the view call callbacks its owner sets (``on_stop``, ``on_stop_tool``, ``on_steer``,
``on_follow_up``, ``on_open_tree``); a callback may return ``False`` to say it did not take the
request. Comm messages may arrive on any thread (JupyterLab sends them over kernel subshells), so
the handlers only hop onto the kernel's event loop with ``loop.call_soon_threadsafe``; callbacks
run there. A callback that fails, or a coroutine it returns that fails, shows a notice in the
view instead of vanishing into a log.

What it shares with the session tree (:class:`PiWidget`, :class:`FrontEndChannel`,
:class:`Callback`) lives in :mod:`~pi_notebook.notebook.widgets.base`.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, cast

import traitlets

from ...ai.events import BLOCK_EVENT_TYPES, DELTA_EVENT_TYPES
from ...ai.options import StallNotice
from ...ai.producer import describe_error
from ...ai.types import Model
from ...harness.budget import BUDGET_STOP_PREFIX
from .base import Callback, PiWidget, module_loader
from .coalesce import Coalescer, Scheduler
from .items import (
    PROGRESS_CHARS,
    add_usage,
    args_text,
    assistant_item,
    content_images,
    content_text,
    context_tokens,
    display_bundle,
    message_json,
    note_item,
    tool_result_item,
    usage_summary,
    user_item,
)
from .protocol import (
    ApprovalPreview,
    ApprovalState,
    AssistantItem,
    Block,
    BlockEdit,
    BudgetMeterRow,
    ChangeReview,
    Origin,
    PatchOp,
    QueuedMessage,
    ReviewChange,
    RunControls,
    RunHeader,
    RunningTool,
    RunPatch,
    RunStatus,
    ToolApproval,
    TranscriptItem,
    UsageSummary,
)

__all__ = ["CONTENT_TRAITS", "RunView"]

_log = logging.getLogger(__name__)

_LIVE: frozenset[str] = frozenset({"waiting", "streaming", "running_tools", "awaiting_approval"})
CONTENT_TRAITS = (
    "status",
    "header",
    "messages",
    "current",
    "running_tools",
    "queued",
    "review",
    "controls",
    "notice",
    "error",
    "stalled_ms",
    "patch_seq",
)
"""The run view's synced traits that carry the run (``resync`` re-sends these)."""
UNSAVED_NOTICE = "Not saved to the session file:"
SAVED_NOTICE = "Saved: what a failed write had kept in memory is in the session file now."
PATCHED_TRAITS = frozenset(CONTENT_TRAITS) - {"notice", "error", "patch_seq"}
"""Traits whose changes travel in ``patch`` messages (``patch_seq`` too) rather than as trait
updates; ``notice`` and ``error`` change rarely and sync as usual."""
SYNC_INTERVAL = 0.1
"""Seconds between patches while a run streams: each message costs ~600 bytes of envelope on
iopub, so 10 a second keep a 1,000 tokens/s reply under 3x its text (bench/kernel_bench.py)."""


# --- the run view ------------------------------------------------------------------------------


@dataclass(slots=True)
class _LiveBlock:
    """One content block of the reply being streamed: text kept as chunks, joined at sync time."""

    type: str
    parts: list[str] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""
    complete: bool = False

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


_Shown: TypeAlias = tuple[dict[str, Any], str]
"""A block of ``current`` as the front end has it: its other keys, and its text (or args)."""


def _text_key(block: Mapping[str, Any]) -> str:
    return "args" if block.get("type") == "toolCall" else "text"


def _shown(blocks: list[Block]) -> list[_Shown]:
    out: list[_Shown] = []
    for block in blocks:
        key = _text_key(block)
        out.append(({k: v for k, v in block.items() if k != key}, str(block.get(key, ""))))
    return out


def _block_edits(before: list[_Shown], after: list[_Shown]) -> list[BlockEdit] | None:
    """The edits that turn the blocks ``before`` into ``after`` (``None``: blocks went away,
    send ``current`` whole). A block whose text grew sends only what was added."""
    if len(after) < len(before):
        return None
    edits: list[BlockEdit] = []
    for position, (meta, text) in enumerate(after):
        if position < len(before):
            old_meta, old_text = before[position]
            if meta == old_meta and text == old_text:
                continue
            at = len(old_text) if text.startswith(old_text) else 0
            edits.append((position, at, text[at:], None if meta == old_meta else meta))
        else:
            edits.append((position, 0, text, meta))
    return edits


@dataclass(slots=True)
class _Sent:
    """The reply in progress as the front end has it (after the patches sent so far)."""

    id: str
    blocks: list[_Shown]


def _empty_usage() -> UsageSummary:
    return usage_summary(None)


class RunView(PiWidget):
    """The live view of one agent run (and of follow-up runs fed to the same view).

    ``model`` and ``thinking_level`` fill the header (context window from ``model``).
    ``sync_interval``, ``clock`` and ``scheduler`` tune the throttle (tests use a fake clock);
    ``loop`` is the kernel's event loop (default: the running one).
    """

    module_name = "run_view"
    _esm = module_loader("run_view")

    content_traits = CONTENT_TRAITS

    status = traitlets.Unicode("waiting").tag(sync=True)
    header = traitlets.Dict().tag(sync=True)
    messages: traitlets.List[Any] = traitlets.List().tag(sync=True)
    current = traitlets.Dict().tag(sync=True)
    running_tools = traitlets.Dict().tag(sync=True)
    queued: traitlets.List[Any] = traitlets.List().tag(sync=True)
    review = traitlets.Dict().tag(sync=True)
    controls = traitlets.Dict().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    stalled_ms = traitlets.Int(0).tag(sync=True)
    patch_seq = traitlets.Int(0).tag(sync=True)

    on_stop: Callback[Callable[[], object]] = Callback("Called when the user clicks Stop.")
    on_stop_tool: Callback[Callable[[str], object]] = Callback(
        "Called with the tool call id when the user stops one running tool call (its card)."
    )
    on_steer: Callback[Callable[[str], object]] = Callback(
        "Called with the text of a steering message sent while the run is live."
    )
    on_follow_up: Callback[Callable[[str], object]] = Callback(
        "Called with the text the user sends once the run is over."
    )
    on_open_tree: Callback[Callable[[], object]] = Callback(
        "Called when the user asks for the session tree."
    )
    on_code_action: Callback[Callable[[str, str], object]] = Callback(
        'Called with ("insert" or "edit", the code) when the user clicks "Insert as cell" or '
        '"Apply as edit" on a runnable code block of a reply (the view checked it is one).'
    )

    def __init__(
        self,
        *,
        model: Model | None = None,
        thinking_level: str = "off",
        loop: asyncio.AbstractEventLoop | None = None,
        sync_interval: float = SYNC_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        scheduler: Scheduler | None = None,
    ) -> None:
        self._clock = clock
        self._sync = Coalescer(
            self._flush, interval=sync_interval, clock=clock, scheduler=scheduler
        )
        self._items: list[TranscriptItem] = []
        self._next_id = 0
        self._live_id: str | None = None
        self._live: dict[int, _LiveBlock] = {}
        self._sent: _Sent | None = None
        self._sent_items = 0
        self._finished: list[TranscriptItem] = []
        """Items added since the last patch (replies among them are promoted, not resent)."""
        self._stalled = 0
        self._running: dict[str, RunningTool] = {}
        self._started: dict[str, float] = {}
        self._finished_tools: set[str] = set()
        self._full_results: dict[str, str] = {}
        self._approvals: dict[str, asyncio.Future[bool]] = {}
        self._previews: dict[str, ApprovalPreview] = {}
        self._always: set[str] = set()
        self._review: ChangeReview | None = None
        self._review_future: asyncio.Future[None] | None = None
        self._reviews = 0
        self._queued: list[QueuedMessage] = []
        self._usage = _empty_usage()
        self._context_tokens = 0
        self._budget: list[BudgetMeterRow] = []
        self._budget_stop: str | None = None
        self._model = f"{model.provider}/{model.id}" if model is not None else ""
        self._context_window = model.context_window if model is not None else 0
        self._thinking_level = thinking_level
        self._answers_only = False
        self._compaction = ""
        self._code_insert = False
        self._code_edit = ""
        self._terminal: RunStatus | None = None
        self._replies_this_run = 0
        self._last_reply_stamp: object = None
        self._version = 0
        # The first state goes out with the comm's opening message.
        super().__init__(header=dict(self._header()), controls=dict(self._controls()))
        self._connect(loop)

    # --- owner API -------------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        """Take one agent event (an ``AgentEvent``; unknown types, e.g. harness events, are
        ignored). Synchronous and cheap; call it on the event loop's thread."""
        self._channel.bind()
        handler = self._handlers.get(getattr(event, "type", None))
        if handler is not None:
            handler(self, event)

    def set_model(self, model: Model | None, thinking_level: str | None = None) -> None:
        """Show another model (and thinking level) in the header."""
        if model is not None:
            self._model = f"{model.provider}/{model.id}"
            self._context_window = model.context_window
        if thinking_level is not None:
            self._thinking_level = thinking_level
        self._sync.mark("header")

    def set_context_tokens(self, tokens: int) -> None:
        """The context's size before a reply reports it (an estimate of what the request
        holds), so the context bar does not read 0 while the first reply streams."""
        self._context_tokens = tokens
        self._sync.mark("header")

    def set_answers_only(self, answers_only: bool) -> None:
        """Say in the header that the model cannot call tools, so it is offered none and
        answers in text only."""
        if answers_only != self._answers_only:
            self._answers_only = answers_only
            self._sync.mark("header")

    def set_code_actions(self, *, insert: bool, edit_target: str = "") -> None:
        """Offer "Insert as cell" on the replies' runnable code blocks (``insert``: a notebook
        frontend is connected), and "Apply as edit" of the cell ``edit_target`` names (``""``:
        none). Shown only while ``on_code_action`` is set."""
        if (insert, edit_target) != (self._code_insert, self._code_edit):
            self._code_insert, self._code_edit = insert, edit_target
            self._sync.mark("controls")

    def add_action_result(
        self,
        tool_call_id: str,
        tool_name: str,
        text: str,
        details: Mapping[str, Any] | None,
        preview: ApprovalPreview,
        reason: str,
    ) -> None:
        """Show a change the user made from the view (e.g. "Insert as cell") as a finished
        tool card: what it did, and ``reason`` as how it was approved."""
        self._channel.bind()
        self._previews[tool_call_id] = preview
        self._running_entry(tool_call_id, tool_name, {})
        self._set_approval(tool_call_id, "allowed", None, reason)
        self.finish_action(tool_call_id, tool_name, text, details)

    def finish_action(
        self,
        tool_call_id: str,
        tool_name: str,
        text: str,
        details: Mapping[str, Any] | None = None,
        *,
        is_error: bool = False,
    ) -> None:
        """End the card of a user's action (one :meth:`request_approval` opened) with its
        result."""
        content = [{"type": "text", "text": text}]
        self._finish_tool(tool_call_id, tool_name, content, details, is_error)
        self._sync.mark("status")

    def add_note(self, title: str, text: str) -> None:
        """A note in the transcript (Markdown ``text`` under a one-line ``title``)."""
        self._channel.bind()
        self._append(
            {"kind": "note", "id": self._new_id(), "role": "note", "title": title, "text": text}
        )

    def note_queued(self, kind: str, text: str) -> None:
        """Show a steering or follow-up message as queued until the run injects it (the steer box
        does this itself; ``%steer`` and friends should call it too)."""
        if kind not in ("steer", "follow_up"):
            raise ValueError(f"kind must be 'steer' or 'follow_up', got {kind!r}")
        self._queued.append({"kind": "steer" if kind == "steer" else "follow_up", "text": text})
        self._sync.mark("queued")

    async def request_approval(
        self,
        tool_call_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        timeout: float | None = None,
        preview: ApprovalPreview | None = None,
    ) -> bool | None:
        """Ask the user to allow a tool call; True/False once they click, None after ``timeout``
        seconds without an answer (the card says so). Stopping the run answers False.
        ``preview`` is what the call would do (shown instead of bare arguments); when it offers
        "always allow", :meth:`answered_always` tells whether the user chose it."""
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive or None, got {timeout!r}")
        self._channel.bind()
        if tool_call_id in self._approvals:
            raise RuntimeError(f"an approval for tool call {tool_call_id!r} is already pending")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bool] = loop.create_future()
        self._approvals[tool_call_id] = future
        if preview is not None:
            self._previews[tool_call_id] = preview
        if tool_call_id not in self._running:
            self._running_entry(tool_call_id, tool_name, args)
        self._set_approval(tool_call_id, "pending", timeout)
        try:
            if timeout is None:
                return await future
            try:
                return await asyncio.wait_for(future, timeout)
            except TimeoutError:
                self._set_approval(tool_call_id, "timed_out", timeout)
                return None
        except asyncio.CancelledError:
            self._set_approval(tool_call_id, "cancelled", timeout)
            raise
        finally:
            self._approvals.pop(tool_call_id, None)
            self._sync.mark("status")

    async def request_review(
        self,
        changes: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]],
        timeout: float | None = None,
    ) -> dict[str, bool] | None:
        """Ask the user to decide several changes on one card: ``changes`` are ``(tool_call_id,
        tool_name, args, preview)``; returns ``{tool_call_id: accepted}`` once every one is
        decided, None after ``timeout`` seconds without all the answers (nothing accepted).
        Stopping the run rejects the undecided ones."""
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive or None, got {timeout!r}")
        if self._review is not None:
            raise RuntimeError("a review is already pending")
        self._channel.bind()
        self._reviews += 1
        review: ChangeReview = {"id": f"review-{self._reviews}", "timeout": timeout, "changes": []}
        for tool_call_id, tool_name, args, preview in changes:
            self._previews[tool_call_id] = preview
            if tool_call_id not in self._running:
                self._running_entry(tool_call_id, tool_name, args)
            review["changes"].append(
                {
                    "tool_call_id": tool_call_id,
                    "tool_name": tool_name,
                    "preview": preview,
                    "decision": "pending",
                }
            )
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._review, self._review_future = review, future
        for change in review["changes"]:
            self._set_approval(change["tool_call_id"], "pending", timeout, review=True)
        self._sync.mark("review", "status")
        try:
            if timeout is None:
                await future
            else:
                try:
                    await asyncio.wait_for(asyncio.shield(future), timeout)
                except TimeoutError:
                    self._close_review("timed_out", timeout, "")
                    return None
        except asyncio.CancelledError:
            self._close_review("cancelled", timeout, "")
            raise
        return {c["tool_call_id"]: c["decision"] == "accepted" for c in review["changes"]}

    def _decide(self, review_id: str, accept: bool, tool_call_id: str | None) -> None:
        """A click on the review card: one change (``tool_call_id``) or all undecided ones."""
        review = self._review
        if review is None or review["id"] != review_id:
            return  # an older card, or answered already
        decision: Literal["accepted", "rejected"] = "accepted" if accept else "rejected"
        changes: list[ReviewChange] = []
        for change in review["changes"]:
            wanted = change["tool_call_id"] == tool_call_id if tool_call_id else True
            if wanted and change["decision"] == "pending":
                change = cast(ReviewChange, {**change, "decision": decision})
            changes.append(change)
        review["changes"] = changes  # a new list: the synced copy must compare unequal
        self._sync.mark("review")
        if all(c["decision"] != "pending" for c in changes):
            self._close_review(None, review["timeout"], "")

    def _close_review(
        self, state: ApprovalState | None, timeout: float | None, reason: str
    ) -> None:
        """End the pending review: every change decided (``state`` None), or not (timed out,
        cancelled, denied: undecided changes are rejected, and none is applied)."""
        review, future = self._review, self._review_future
        if review is None or future is None:
            return
        self._review, self._review_future = None, None
        if state is not None:  # not decided to the end: nothing of it is applied
            review["changes"] = [
                cast(ReviewChange, {**c, "decision": "rejected"}) for c in review["changes"]
            ]
        total = len(review["changes"])
        accepted = sum(c["decision"] == "accepted" for c in review["changes"])
        for change in review["changes"]:
            if state is not None:
                self._set_approval(change["tool_call_id"], state, timeout, reason, review=True)
                continue
            words = f"Decided in a review of {total} changes ({accepted} accepted)."
            allowed = change["decision"] == "accepted"
            final: ApprovalState = "allowed" if allowed else "denied"
            self._set_approval(change["tool_call_id"], final, timeout, words, review=True)
        if not future.done():
            future.set_result(None)
        self._sync.mark("review", "status")

    def note_policy(
        self, tool_call_id: str, tool_name: str, args: Mapping[str, Any], *, allowed: bool
    ) -> None:
        """Show on the call's card that the approval policy answered for the user."""
        self._channel.bind()
        if tool_call_id not in self._running and tool_call_id not in self._finished_tools:
            self._running_entry(tool_call_id, tool_name, args)
        verdict = "allow" if allowed else "deny"
        reason = f"By the approval policy (%approve {tool_name} {verdict})."
        self._set_approval(tool_call_id, "allowed" if allowed else "denied", None, reason)

    def resync(self, *, full: bool = False, content: bool = True) -> None:
        """:meth:`PiWidget.resync`; ``content=False`` when the page applies the patches (it
        has the whole state already): only a stale text fallback is refreshed."""
        if not content and not full:
            self._unsent = False
        super().resync(full=full)

    def note_unsaved(self, reason: str) -> None:
        """Say that part of the run is not in the session file (a write failed): the notice
        stays until dismissed, and the text fallback carries it too."""
        self._version += 1
        self._set_notice(f"{UNSAVED_NOTICE} {reason}")

    def note_stopped(self, reason: str) -> None:
        """Say why the harness stopped the run on its own (e.g. a model stuck repeating one
        tool call); the notice stays until dismissed."""
        self._version += 1
        self._set_notice(reason)

    def note_saved(self) -> None:
        """Say that what :meth:`note_unsaved` reported is in the session file now (a later
        write retried it); a notice the user dismissed stays dismissed."""
        if self.notice.startswith(UNSAVED_NOTICE):
            self._version += 1
            self._set_notice(SAVED_NOTICE)

    def note_stall(self, notice: StallNotice) -> None:
        """Show how long the model request has been silent (``StreamOptions.on_stall`` /
        ``Agent.on_stall``); a notice that data flows again clears it."""
        self._channel.bind()
        stalled = notice.waited_ms if notice.stalled and self._terminal is None else 0
        if stalled != self._stalled:
            self._stalled = stalled
            self._version += 1
            self._sync.mark("stalled_ms")

    def answered_always(self, tool_call_id: str) -> bool:
        """The user allowed this call with "always allow for this session"."""
        return tool_call_id in self._always

    def fail(self, error: BaseException | str) -> None:
        """Show that the run failed outside the event stream (e.g. its task raised)."""
        if isinstance(error, str):
            text = error
        else:
            text = f"{type(error).__name__}: {describe_error(error)}"
        self._end("error", f"The run failed: {text}")

    @property
    def items(self) -> list[TranscriptItem]:
        """The finished transcript items (what ``messages`` holds once synced)."""
        return list(self._items)

    @property
    def is_live(self) -> bool:
        return self._status() in _LIVE

    # --- events ----------------------------------------------------------------------------------

    def _on_agent_start(self, _event: Any) -> None:
        self._terminal = None
        self._replies_this_run = 0
        self.error = ""
        self._sync.mark("status", "controls")

    def _on_message_start(self, event: Any) -> None:
        if getattr(event.message, "role", None) != "assistant":
            return
        self._live_id = self._new_id()
        self._live = {}
        self._sync.mark("current", "status")

    def _on_message_update(self, event: Any) -> None:
        delta = event.assistant_message_event
        kind = delta.type
        if kind in ("start", "done", "error"):
            return
        if self._live_id is None:  # an update without message_start: start one anyway
            self._live_id = self._new_id()
        if self._stalled:  # data flows (the LLM layer says so too, a moment later)
            self._stalled = 0
            self._sync.mark("stalled_ms")
        index: int = delta.content_index
        block = self._live.get(index)
        if kind in DELTA_EVENT_TYPES:
            if block is None:
                block = self._live[index] = _LiveBlock(_BLOCK_TYPES[kind])
            block.parts.append(delta.delta)
        elif kind in ("text_start", "thinking_start"):
            self._live[index] = _LiveBlock(_BLOCK_TYPES[kind])
        elif kind == "toolcall_start":
            content = delta.partial.content  # once per call: cheap enough to materialise
            call = content[index] if index < len(content) else None
            self._live[index] = _LiveBlock(
                "toolCall",
                tool_call_id=getattr(call, "id", ""),
                name=getattr(call, "name", ""),
            )
        elif kind in ("text_end", "thinking_end"):
            self._live[index] = _LiveBlock(_BLOCK_TYPES[kind], [delta.content], complete=True)
        elif kind == "toolcall_end":
            call = delta.tool_call
            self._live[index] = _LiveBlock(
                "toolCall", [args_text(call.arguments)], call.id, call.name, complete=True
            )
        self._sync.mark("current")

    def _on_message_end(self, event: Any) -> None:
        message = message_json(event.message)
        role = message.get("role")
        if role == "assistant":
            item_id = self._live_id or self._new_id()
            self._live_id = None
            self._live = {}
            self._add_reply(message, item_id)
        elif role == "user":
            self._append(user_item(message, self._new_id(), self._origin(message)))
        elif role == "toolResult":
            call_id = str(message.get("toolCallId", ""))
            if call_id not in self._finished_tools:
                self._finish_tool(
                    call_id,
                    str(message.get("toolName", "")),
                    message.get("content"),
                    message.get("details"),
                    bool(message.get("isError")),
                )
        else:
            self._append(note_item(message, self._new_id()))
        self._sync.mark("current", "status")

    def _on_tool_start(self, event: Any) -> None:
        if event.tool_call_id in self._running:
            return  # listed in a review already: its card keeps the decision
        self._running_entry(event.tool_call_id, event.tool_name, event.args)
        self._sync.mark("running_tools", "status")

    def _on_tool_update(self, event: Any) -> None:
        tool = self._running.get(event.tool_call_id)
        if tool is None:
            tool = self._running_entry(event.tool_call_id, event.tool_name, event.args)
        partial = event.partial_result
        content = getattr(partial, "content", None)
        blocks = [b.model_dump(mode="json", by_alias=True) for b in content or ()]
        text = content_text(blocks)
        updated = dict(tool)
        updated["progress"] = text[-PROGRESS_CHARS:]
        updated["progress_bundle"] = display_bundle(getattr(partial, "details", None))
        updated["progress_images"] = content_images(blocks)
        self._running[event.tool_call_id] = cast(RunningTool, updated)
        self._sync.mark("running_tools")

    def _on_tool_end(self, event: Any) -> None:
        result = event.result
        blocks = [b.model_dump(mode="json", by_alias=True) for b in result.content]
        self._finish_tool(
            event.tool_call_id, event.tool_name, blocks, result.details, bool(event.is_error)
        )
        self._sync.mark("status")

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
                self._add_reply(last, self._new_id())
        reason = self._last_reply_stop_reason()
        if reason == "aborted":
            self._end("aborted", "")
        elif reason == "error":
            # the failed reply shows the model's error in the transcript: not again below it
            self._end("error", "")
        else:
            self._end("done", "")

    def _on_budget_update(self, event: Any) -> None:
        rows: list[BudgetMeterRow] = []
        scopes: tuple[tuple[Literal["run", "session"], Any, Any], ...] = (
            ("run", event.run_caps, event.run_spent),
            ("session", event.session_caps, event.session_spent),
        )
        kinds: tuple[tuple[Literal["cost", "tokens", "turns"], str], ...] = (
            ("cost", "maxCost"),
            ("tokens", "maxTokens"),
            ("turns", "maxTurns"),
        )
        for scope, caps, spent in scopes:
            for kind, key in kinds:
                if key in caps:
                    rows.append(
                        {"scope": scope, "kind": kind, "spent": spent[kind], "cap": caps[key]}
                    )
        self._budget = rows
        self._sync.mark("header")
        if event.stopped and event.stopped != self._budget_stop:
            self._budget_stop = event.stopped
            self.note_stopped(event.stopped)

    def _on_compaction_start(self, event: Any) -> None:
        before = getattr(event, "tokens_before", None)
        self._compaction = (
            f"compacting: {before:,} tokens → …" if before else "compacting the conversation …"
        )
        self._sync.mark("header")

    def _on_compaction_end(self, event: Any) -> None:
        before = getattr(getattr(event, "result", None), "tokens_before", None)
        after = getattr(event, "tokens_after", None)
        if getattr(event, "error_message", None) or getattr(event, "aborted", False):
            self._compaction = "compaction failed" if not event.aborted else "compaction stopped"
        elif before and after is not None:
            self._compaction = f"compacted: {before:,} → {after:,} tokens"
            self._context_tokens = after  # the context bar shows the compacted size
        else:
            self._compaction = "compacted"
        self._sync.mark("header")

    _handlers: ClassVar[Mapping[object, Callable[[RunView, Any], None]]] = {
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

    def _new_id(self) -> str:
        self._next_id += 1
        return f"m{self._next_id}"

    def _append(self, item: TranscriptItem) -> None:
        self._items.append(item)
        self._finished.append(item)
        self._version += 1
        self._sync.mark("messages")

    def _add_reply(self, message: Mapping[str, Any], item_id: str) -> None:
        item = assistant_item(message, item_id)
        self._append(item)
        self._replies_this_run += 1
        self._last_reply_stamp = message.get("timestamp")
        usage = item["usage"] or _empty_usage()
        self._usage = add_usage(self._usage, usage)
        if context_tokens(usage):
            self._context_tokens = context_tokens(usage)
        if item["model"] and not self._model:
            self._model = item["model"]
        self._sync.mark("header")

    def _reply_recorded(self, message: Mapping[str, Any]) -> bool:
        return self._replies_this_run > 0 and self._last_reply_stamp == message.get("timestamp")

    def _last_reply(self) -> AssistantItem | None:
        if self._replies_this_run == 0:
            return None
        for item in reversed(self._items):
            if item["kind"] == "assistant":
                return item
        return None

    def _last_reply_stop_reason(self) -> str | None:
        reply = self._last_reply()
        return reply["stop_reason"] if reply is not None else None

    def _origin(self, message: Mapping[str, Any]) -> Origin:
        text = content_text(message.get("content"))
        for index, queued in enumerate(self._queued):
            if queued["text"] == text:
                del self._queued[index]
                self._sync.mark("queued")
                return queued["kind"]
        return "prompt" if self._replies_this_run == 0 else "user"

    def _running_entry(
        self, tool_call_id: str, tool_name: str, args: Mapping[str, Any]
    ) -> RunningTool:
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
        self._running[tool_call_id] = tool
        self._started.setdefault(tool_call_id, self._clock())
        return tool

    def _set_approval(
        self,
        tool_call_id: str,
        state: ApprovalState,
        timeout: float | None,
        reason: str = "",
        *,
        review: bool = False,
    ) -> None:
        tool = self._running.get(tool_call_id)
        if tool is None:
            return
        approval: ToolApproval = {
            "state": state,
            "timeout": timeout,
            "reason": reason,
            "preview": self._previews.get(tool_call_id),
            "review": review,
        }
        updated = dict(tool)
        updated["approval"] = approval
        self._running[tool_call_id] = cast(RunningTool, updated)
        self._sync.mark("running_tools", "status")

    def _finish_tool(
        self,
        tool_call_id: str,
        tool_name: str,
        content: object,
        details: object,
        is_error: bool,
    ) -> None:
        tool = self._running.pop(tool_call_id, None)
        started = self._started.pop(tool_call_id, None)
        duration = None if started is None else round((self._clock() - started) * 1000)
        item, text = tool_result_item(
            self._new_id(),
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
        self._finished_tools.add(tool_call_id)
        self._append(item)
        self._sync.mark("running_tools")

    def _settle_approvals(self, allow: bool, reason: str) -> None:
        self._close_review("allowed" if allow else "denied", None, reason)
        for tool_call_id, future in list(self._approvals.items()):
            if not future.done():
                tool = self._running.get(tool_call_id)
                timeout = tool["approval"]["timeout"] if tool and tool["approval"] else None
                self._set_approval(tool_call_id, "allowed" if allow else "denied", timeout, reason)
                future.set_result(allow)

    def _end(self, status: RunStatus, error: str) -> None:
        self._settle_approvals(False, "The run ended.")
        self._terminal = status
        self._queued.clear()
        self._live_id = None
        self._live = {}
        self.error = error
        self._stalled = 0
        self._version += 1
        self._sync.mark(
            "status", "current", "queued", "controls", "header", "running_tools", "stalled_ms"
        )
        self._sync.flush()

    def _status(self) -> RunStatus:
        if self._terminal is not None:
            return self._terminal
        if self._review is not None or any(not f.done() for f in self._approvals.values()):
            return "awaiting_approval"
        if self._live_id is not None:
            return "streaming"
        if self._running:
            return "running_tools"
        return "waiting"

    def _header(self) -> RunHeader:
        return {
            "model": self._model,
            "thinking_level": self._thinking_level,
            "usage": self._usage,
            "context_tokens": self._context_tokens,
            "context_window": self._context_window,
            "budget": list(self._budget),
            "answers_only": self._answers_only,
            "compaction": self._compaction,
        }

    def _current(self) -> AssistantItem | dict[str, Any]:
        if self._live_id is None:
            return {}
        blocks: list[Block] = []
        for index in sorted(self._live):
            block = self._live[index]
            if block.type == "toolCall":
                blocks.append(
                    {
                        "type": "toolCall",
                        "id": block.tool_call_id,
                        "name": block.name,
                        "args": block.text(),
                        "complete": block.complete,
                    }
                )
            elif block.type == "thinking":
                blocks.append({"type": "thinking", "text": block.text(), "redacted": False})
            else:
                blocks.append({"type": "text", "text": block.text()})
        return {
            "kind": "assistant",
            "id": self._live_id,
            "blocks": blocks,
            "stop_reason": None,
            "error_message": None,
            "model": self._model,
            "usage": None,
        }

    def _transcript_ops(self) -> list[PatchOp]:
        """Ops for the items added since the last patch, then for the reply in progress."""
        ops: list[PatchOp] = []
        pushed: list[TranscriptItem] = []

        def push() -> None:
            if pushed:
                ops.append(("push", self._sent_items, list(pushed)))
                self._sent_items += len(pushed)
                pushed.clear()

        for item in self._finished:
            sent = self._sent
            if item["kind"] == "assistant" and sent is not None and sent.id == item["id"]:
                self._sent = None
                edits = _block_edits(sent.blocks, _shown(item["blocks"]))
                if edits is not None:
                    push()
                    if edits:
                        ops.append(("blocks", item["id"], edits))
                    fields = {k: v for k, v in item.items() if k != "blocks"}
                    ops.append(("promote", self._sent_items, fields))
                    self._sent_items += 1
                    continue
                ops.append(("current", {}))
            pushed.append(item)
        push()
        self._finished.clear()
        current = self._current()
        sent = self._sent
        if self._live_id is None:
            if sent is not None:
                ops.append(("current", {}))
                self._sent = None
            return ops
        blocks = _shown(cast(AssistantItem, current)["blocks"])
        same = sent is not None and sent.id == self._live_id
        edits = _block_edits(sent.blocks, blocks) if sent is not None and same else None
        if edits is None:
            ops.append(("current", current))
        elif edits:
            ops.append(("blocks", self._live_id, edits))
        self._sent = _Sent(self._live_id, blocks)
        return ops

    def _controls(self) -> RunControls:
        return {
            "stop": self.on_stop is not None,
            "stop_tool": self.on_stop_tool is not None,
            "steer": self.on_steer is not None,
            "follow_up": self.on_follow_up is not None,
            "tree": self.on_open_tree is not None,
            "insert_code": self.on_code_action is not None and self._code_insert,
            "edit_code": self._code_edit if self.on_code_action is not None else "",
        }

    def _callbacks_changed(self) -> None:
        self._sync.mark("controls")

    def _flush(self, names: frozenset[str]) -> None:
        """Bring the traits up to date without syncing them, and send what changed as one
        patch (the traits still hold the whole state: a state request gets all of it)."""
        ops: list[PatchOp] = []
        changed: dict[str, Any] = {}
        with self.hold_sync():
            if "messages" in names or "current" in names:
                ops = self._transcript_ops()
                self.messages = list(self._items)
                self.current = dict(self._current())
            for name, value in (
                ("running_tools", lambda: dict(self._running)),
                ("header", lambda: dict(self._header())),
                ("queued", lambda: list(self._queued)),
                ("review", lambda: dict(self._review or {})),
                ("controls", lambda: dict(self._controls())),
                ("status", self._status),
                ("stalled_ms", lambda: self._stalled),
            ):
                if name in names:
                    new = value()
                    if new != getattr(self, name):
                        setattr(self, name, new)
                        changed[name] = new
            if ops or changed:
                self.patch_seq += 1
            # ipywidgets queues the assignments above for one update message; they travel in
            # the patch instead (``patch_seq`` with them).
            self._states_to_send.difference_update(PATCHED_TRAITS | {"patch_seq"})
        if (ops or changed) and self.comm is not None:
            patch: RunPatch = {"type": "patch", "seq": self.patch_seq, "ops": ops, "set": changed}
            self.send(patch)

    # --- front-end requests (on the event loop) --------------------------------------------------

    def _dispatch(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "stop":
            self._settle_approvals(False, "The run was stopped.")
            self._channel.call("Stop", self.on_stop)
        elif kind in ("steer", "follow_up"):
            text = message.get("text")
            if not isinstance(text, str) or not text.strip():
                return
            self._send_text(text.strip(), steer=kind == "steer" and self.is_live)
        elif kind == "approval":
            self._answer_approval(
                str(message.get("tool_call_id")),
                bool(message.get("allow")),
                always=bool(message.get("always")),
            )
        elif kind == "review":
            call = message.get("tool_call_id")
            self._decide(
                str(message.get("review_id")),
                bool(message.get("accept")),
                str(call) if call is not None else None,
            )
        elif kind == "stop_tool":
            self._stop_tool(str(message.get("tool_call_id")))
        elif kind == "expand":
            self._expand(str(message.get("tool_call_id")))
        elif kind == "code_action":
            self._code_action(message)
        elif kind == "open_tree":
            self._channel.call("Open the session tree", self.on_open_tree)
        elif kind == "dismiss_notice":
            self.notice = ""
        elif kind == "resync":
            self._sync.flush()
            self.send_state(list(self.content_traits))
        else:
            self._set_notice(f"Ignored an unknown widget request {kind!r}.")

    def _code_action(self, message: dict[str, Any]) -> None:
        """A click on a code block's button: acted on only for a runnable code block of one of
        this view's replies, and only where the view offers that action."""
        from ..workspace.code_actions import code_blocks

        action, source = message.get("action"), message.get("source")
        controls = self._controls()
        offered = {"insert": controls["insert_code"], "edit": bool(controls["edit_code"])}
        if not isinstance(source, str) or not offered.get(str(action)):
            self._set_notice("Ignored a code action this view does not offer.")
            return
        item = next((i for i in self._items if i["id"] == message.get("item_id")), None)
        blocks = [] if item is None or item["kind"] != "assistant" else item["blocks"]
        text = "\n".join(b["text"] for b in blocks if b["type"] == "text")
        if not any(block.rstrip() == source.rstrip() for block in code_blocks(text)):
            self._set_notice(
                "Ignored a code action: that code is not a block of this run's replies."
            )
            return
        label = "Insert as cell" if action == "insert" else "Apply as edit"
        self._channel.call(label, self.on_code_action, str(action), source.rstrip())

    def _send_text(self, text: str, *, steer: bool) -> None:
        kind: Literal["steer", "follow_up"] = "steer" if steer else "follow_up"
        live = self.is_live
        before = len(self._queued)
        callback = self.on_steer if steer else self.on_follow_up
        taken = self._channel.call("Steer" if steer else "Follow-up", callback, text)
        # Shown as queued until the run injects it, unless the owner noted it already.
        if taken and live and len(self._queued) == before:
            self.note_queued(kind, text)

    def _answer_approval(self, tool_call_id: str, allow: bool, *, always: bool = False) -> None:
        future = self._approvals.get(tool_call_id)
        if future is None or future.done():
            return  # answered already, timed out, or the run moved on: the card says which
        tool = self._running.get(tool_call_id)
        timeout = tool["approval"]["timeout"] if tool and tool["approval"] else None
        preview = self._previews.get(tool_call_id)
        always = allow and always and preview is not None and preview["always"]
        if always:
            self._always.add(tool_call_id)
        reason = "Always allowed for this session." if always else ""
        self._set_approval(tool_call_id, "allowed" if allow else "denied", timeout, reason)
        future.set_result(allow)

    def _stop_tool(self, tool_call_id: str) -> None:
        """One card's stop: the owner aborts that call; an approval it waits for is refused."""
        if tool_call_id not in self._running:
            return  # it ended already: its card shows the result
        self._channel.call("Stop the tool call", self.on_stop_tool, tool_call_id)
        future = self._approvals.get(tool_call_id)
        if future is not None and not future.done():
            tool = self._running[tool_call_id]
            timeout = tool["approval"]["timeout"] if tool["approval"] else None
            self._set_approval(tool_call_id, "denied", timeout, "The call was stopped.")
            future.set_result(False)

    def _expand(self, tool_call_id: str) -> None:
        text = self._full_results.get(tool_call_id)
        if text is None:
            item = next((i for i in self._items if i.get("tool_call_id") == tool_call_id), None)
            text = str(item.get("text", "")) if item is not None else ""
        self.send({"type": "expanded", "tool_call_id": tool_call_id, "text": text})

    # --- text fallbacks --------------------------------------------------------------------------

    def transcript_text(self) -> str:
        """The run as plain text: a header line, then each message."""
        u = self._usage
        usage = f"{u['input']:,} in / {u['output']:,} out · ${u['cost']:.4f}"
        if self._stopped_without_usage():
            known = u["input"] or u["output"] or u["cost"]
            usage = f"{usage} · stopped reply: usage unknown" if known else "usage unknown: stopped"
        status = _STATUS_WORDS.get(self._status(), self._status())
        if self._stalled:
            status = f"{_STALL_WORDS} — {self._stalled // 1000} s"
        lines = [
            f"pi run · {status}"
            + (f" · {self._model}" if self._model else "")
            + f" · {usage}"
            + (f" · budget {budget_text(self._budget)}" if self._budget else "")
        ]
        for item in self._items:
            lines.append(_item_text(item))
        if self._live_id is not None:
            lines.append(_item_text(cast(AssistantItem, self._current())) + " …")
        if self.error:
            lines.append(f"! {self.error}")
        if self.notice:
            lines.append(f"! {self.notice}")
        return "\n".join(lines)

    def _stopped_without_usage(self) -> bool:
        """A reply was stopped before the provider reported its usage (the header says so
        rather than show ↑0 ↓0 · $0)."""
        for item in self._items:
            if (
                item["kind"] == "assistant"
                and item["stop_reason"] == "aborted"
                and not (item["error_message"] or "").startswith(BUDGET_STOP_PREFIX)
            ):
                usage = item["usage"]
                if usage is None or not (usage["input"] or usage["output"] or usage["cost"]):
                    return True
        return False

    def transcript_html(self) -> str:
        """The run as simple, static HTML (no scripts, no widget needed)."""
        esc = html.escape
        parts = [
            '<div class="pi-run-static" style="border:1px solid #ccc;border-radius:6px;'
            'padding:6px 10px;font-family:sans-serif;font-size:13px">',
            f'<div style="color:#666">{esc(self.transcript_text().splitlines()[0])}</div>',
        ]
        for item in self._items:
            parts.append(_item_html(item))
        if self.error:
            parts.append(f'<div style="color:#b00020">{esc(self.error)}</div>')
        parts.append("</div>")
        return "".join(parts)

    def _fallbacks(self) -> tuple[str, str]:
        return self.transcript_text(), self.transcript_html()


_BLOCK_TYPES = {
    kind: {"text": "text", "thinking": "thinking", "toolcall": "toolCall"}[kind.split("_")[0]]
    for kind in BLOCK_EVENT_TYPES
}
"""The content-block type each block event is about (``text_delta`` → ``text``)."""

_STALL_WORDS = "waiting for the model"
"""Shown with the seconds of silence while the LLM layer reports a stall."""

_STATUS_WORDS = {
    "waiting": "waiting for the model",
    "streaming": "streaming",
    "running_tools": "running tools",
    "awaiting_approval": "waiting for approval",
    "done": "done",
    "aborted": "stopped",
    "error": "error",
}


def budget_text(rows: list[BudgetMeterRow]) -> str:
    """Spending against caps in words: ``run $0.0123/$0.20, 3/15 turns; session …``."""
    scopes: dict[str, list[str]] = {}
    for row in rows:
        spent, cap = row["spent"], row["cap"]
        if row["kind"] == "cost":
            text = f"${spent:.4f}/${cap:.2f}"
        elif row["kind"] == "tokens":
            text = f"{int(spent):,}/{int(cap):,} tokens"
        else:
            text = f"{int(spent)}/{int(cap)} turns"
        scopes.setdefault(row["scope"], []).append(text)
    return "; ".join(f"{scope} {', '.join(parts)}" for scope, parts in scopes.items())


def _indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _item_text(item: TranscriptItem) -> str:
    if item["kind"] == "user":
        label = {"steer": "steer", "follow_up": "follow-up"}.get(item["origin"], "user")
        return f"{label}: {item['text']}"
    if item["kind"] == "assistant":
        out: list[str] = []
        for block in item["blocks"]:
            if block["type"] == "text":
                out.append(block["text"])
            elif block["type"] == "thinking":
                out.append(f"[thinking: {len(block['text']):,} characters]")
            else:
                args = " ".join(block["args"].split())
                out.append(f"→ {block['name']}({args[:200]})")
        if item["stop_reason"] == "aborted":
            out.append("[stopped; partial reply kept]")
        elif item["stop_reason"] == "error":
            out.append(f"[error: {item['error_message'] or 'unknown'}]")
        body = "\n".join(out)
        return "assistant: " + body.lstrip() if body else "assistant: (no text)"
    if item["kind"] == "tool_result":
        status = "error" if item["is_error"] else "result"
        text = item["text"] if len(item["text"]) <= 2000 else item["text"][:2000] + " …"
        head = f"[{item['tool_name']} {status}]"
        return f"{head}\n{_indent(text)}" if text else head
    return f"[{item['title']}]\n{_indent(item['text'][:2000])}"


def _item_html(item: TranscriptItem) -> str:
    esc = html.escape
    pre = 'style="white-space:pre-wrap;margin:4px 0"'
    if item["kind"] == "user":
        return (
            '<div style="border-left:3px solid #1976d2;padding:2px 8px;margin:6px 0">'
            f"<div {pre}>{esc(item['text'])}</div></div>"
        )
    if item["kind"] == "assistant":
        parts: list[str] = []
        for block in item["blocks"]:
            if block["type"] == "text":
                parts.append(f"<div {pre}>{esc(block['text'])}</div>")
            elif block["type"] == "thinking":
                parts.append(
                    "<details><summary>Thinking</summary>"
                    f"<div {pre}>{esc(block['text'])}</div></details>"
                )
            else:
                parts.append(
                    f"<div><code>→ {esc(block['name'])}</code>"
                    f"<pre {pre}>{esc(block['args'][:4000])}</pre></div>"
                )
        if item["stop_reason"] in ("aborted", "error"):
            note = esc(_item_text(item).splitlines()[-1])
            parts.append(f'<div style="color:#b00020">{note}</div>')
        return f'<div style="margin:6px 0">{"".join(parts)}</div>'
    if item["kind"] == "tool_result":
        label = "error" if item["is_error"] else "result"
        return (
            f"<details><summary><code>{esc(item['tool_name'])}</code> {label}</summary>"
            f"<pre {pre}>{esc(item['text'][:20000])}</pre></details>"
        )
    return (
        f"<details><summary>{esc(item['title'])}</summary>"
        f"<pre {pre}>{esc(item['text'])}</pre></details>"
    )
