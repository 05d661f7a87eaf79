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
:class:`Callback`) lives in :mod:`~pi_notebook.notebook.widgets.base`. What the events say is
kept by :class:`~pi_notebook.notebook.widgets.run_feed.RunFeed` (transcript and patches, tool
cards, approvals, header); the view adds the code actions (:mod:`.run_code_actions`) and the
static renditions (:mod:`.run_static`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import traitlets

from ...ai.options import StallNotice
from ...ai.producer import describe_error
from ...ai.types import Model
from .base import Callback, PiWidget, module_loader
from .coalesce import Coalescer, Scheduler
from .protocol import (
    ApprovalPreview,
    PatchOp,
    RunControls,
    RunHeader,
    RunPatch,
    RunStatus,
    TranscriptItem,
)
from .run_code_actions import CodeActionRefused, CodeActions
from .run_feed import RunFeed
from .run_static import run_html, run_text

__all__ = ["CONTENT_TRAITS", "RunView"]


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
        self._sync = Coalescer(
            self._flush, interval=sync_interval, clock=clock, scheduler=scheduler
        )
        self._feed = RunFeed(
            model=model,
            thinking_level=thinking_level,
            clock=clock,
            mark=self._sync.mark,
            started=self._started,
            ended=self._end,
            stopped=self.note_stopped,
        )
        self._code = CodeActions()
        # The first state goes out with the comm's opening message.
        super().__init__(header=dict(self._header()), controls=dict(self._controls()))
        self._connect(loop)

    # --- owner API -------------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        """Take one agent event (an ``AgentEvent``; unknown types, e.g. harness events, are
        ignored). Synchronous and cheap; call it on the event loop's thread."""
        self._channel.bind()
        self._feed.handle(event)

    def set_model(self, model: Model | None, thinking_level: str | None = None) -> None:
        """Show another model (and thinking level) in the header."""
        self._feed.head.set_model(model, thinking_level)
        self._sync.mark("header")

    def set_context_tokens(self, tokens: int) -> None:
        """The context's size before a reply reports it (an estimate of what the request
        holds), so the context bar does not read 0 while the first reply streams."""
        self._feed.head.context_tokens = tokens
        self._sync.mark("header")

    def set_answers_only(self, answers_only: bool) -> None:
        """Say in the header that the model cannot call tools, so it is offered none and
        answers in text only."""
        if answers_only != self._feed.head.answers_only:
            self._feed.head.answers_only = answers_only
            self._sync.mark("header")

    def set_code_actions(self, *, insert: bool, edit_target: str = "") -> None:
        """Offer "Insert as cell" on the replies' runnable code blocks (``insert``: a notebook
        frontend is connected), and "Apply as edit" of the cell ``edit_target`` names (``""``:
        none). Shown only while ``on_code_action`` is set."""
        if self._code.offer(insert=insert, edit_target=edit_target):
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
        cards = self._feed.cards
        cards.previews[tool_call_id] = preview
        cards.open(tool_call_id, tool_name, {})
        cards.set_approval(tool_call_id, "allowed", None, reason)
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
        self._feed.finish_tool(tool_call_id, tool_name, content, details, is_error)
        self._sync.mark("status")

    def add_note(self, title: str, text: str) -> None:
        """A note in the transcript (Markdown ``text`` under a one-line ``title``)."""
        self._channel.bind()
        item_id = self._feed.transcript.new_id()
        self._feed.append(
            {"kind": "note", "id": item_id, "role": "note", "title": title, "text": text}
        )

    def note_queued(self, kind: str, text: str) -> None:
        """Show a steering or follow-up message as queued until the run injects it (the steer box
        does this itself; ``%steer`` and friends should call it too)."""
        if kind not in ("steer", "follow_up"):
            raise ValueError(f"kind must be 'steer' or 'follow_up', got {kind!r}")
        self._feed.queued.append(
            {"kind": "steer" if kind == "steer" else "follow_up", "text": text}
        )
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
        self._channel.bind()
        return await self._feed.approvals.request(tool_call_id, tool_name, args, timeout, preview)

    async def request_review(
        self,
        changes: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]],
        timeout: float | None = None,
    ) -> dict[str, bool] | None:
        """Ask the user to decide several changes on one card: ``changes`` are ``(tool_call_id,
        tool_name, args, preview)``; returns ``{tool_call_id: accepted}`` once every one is
        decided, None after ``timeout`` seconds without all the answers (nothing accepted).
        Stopping the run rejects the undecided ones."""
        self._channel.bind()
        return await self._feed.approvals.request_review(changes, timeout)

    def note_policy(
        self, tool_call_id: str, tool_name: str, args: Mapping[str, Any], *, allowed: bool
    ) -> None:
        """Show on the call's card that the approval policy answered for the user."""
        self._channel.bind()
        self._feed.approvals.note_policy(tool_call_id, tool_name, args, allowed=allowed)

    def answered_always(self, tool_call_id: str) -> bool:
        """The user allowed this call with "always allow for this session"."""
        return self._feed.approvals.answered_always(tool_call_id)

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
        live = notice.stalled and self._feed.terminal is None
        self._feed.set_stalled(notice.waited_ms if live else 0)

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
        return list(self._feed.transcript.items)

    @property
    def is_live(self) -> bool:
        return self._status() in _LIVE

    # --- bookkeeping -----------------------------------------------------------------------------

    @property
    def _version(self) -> int:  # the text rendition's version is the feed's
        return self._feed.version

    @_version.setter
    def _version(self, value: int) -> None:
        self._feed.version = value

    def _settle_approvals(self, allow: bool, reason: str) -> None:
        self._feed.approvals.settle(allow, reason)

    def _end(self, status: RunStatus, error: str = "") -> None:
        self._feed.end(status)
        self.error = error
        # A run often ends after its cell (and the cells after it) ran: no post_run_cell hook
        # comes to refresh the fallback, and the page saves the one shown last. It goes out
        # before the patch that says the run ended, so a page showing the end has it.
        self._refresh_fallback()
        self._sync.flush()

    def _status(self) -> RunStatus:
        return self._feed.status()

    def _header(self) -> RunHeader:
        return self._feed.head.as_dict()

    def _controls(self) -> RunControls:
        insert_code, edit_code = self._code.controls(self.on_code_action is not None)
        return {
            "stop": self.on_stop is not None,
            "stop_tool": self.on_stop_tool is not None,
            "steer": self.on_steer is not None,
            "follow_up": self.on_follow_up is not None,
            "tree": self.on_open_tree is not None,
            "insert_code": insert_code,
            "edit_code": edit_code,
        }

    def _started(self) -> None:
        self.error = ""

    def _callbacks_changed(self) -> None:
        self._sync.mark("controls")

    def _flush(self, names: frozenset[str]) -> None:
        """Bring the traits up to date without syncing them, and send what changed as one
        patch (the traits still hold the whole state: a state request gets all of it)."""
        ops: list[PatchOp] = []
        changed: dict[str, Any] = {}
        transcript = self._feed.transcript
        with self.hold_sync():
            if "messages" in names or "current" in names:
                ops = transcript.ops(self._feed.head.model)
                self.messages = list(transcript.items)
                self.current = dict(transcript.current(self._feed.head.model) or {})
            for name, value in (
                ("running_tools", lambda: dict(self._feed.cards.running)),
                ("header", lambda: dict(self._header())),
                ("queued", lambda: list(self._feed.queued)),
                ("review", lambda: dict(self._feed.approvals.review or {})),
                ("controls", lambda: dict(self._controls())),
                ("status", self._status),
                ("stalled_ms", lambda: self._feed.stalled),
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
            self._feed.approvals.answer(
                str(message.get("tool_call_id")),
                bool(message.get("allow")),
                always=bool(message.get("always")),
            )
        elif kind == "review":
            call = message.get("tool_call_id")
            self._feed.approvals.decide(
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
        enabled = self.on_code_action is not None
        try:
            label, action, source = self._code.check(
                message, self._feed.transcript.items, enabled=enabled
            )
        except CodeActionRefused as refused:
            self._set_notice(str(refused))
            return
        self._channel.call(label, self.on_code_action, action, source)

    def _send_text(self, text: str, *, steer: bool) -> None:
        kind: Literal["steer", "follow_up"] = "steer" if steer else "follow_up"
        live = self.is_live
        before = len(self._feed.queued)
        callback = self.on_steer if steer else self.on_follow_up
        taken = self._channel.call("Steer" if steer else "Follow-up", callback, text)
        # Shown as queued until the run injects it, unless the owner noted it already.
        if taken and live and len(self._feed.queued) == before:
            self.note_queued(kind, text)

    def _stop_tool(self, tool_call_id: str) -> None:
        """One card's stop: the owner aborts that call; an approval it waits for is refused."""
        if tool_call_id not in self._feed.cards.running:
            return  # it ended already: its card shows the result
        self._channel.call("Stop the tool call", self.on_stop_tool, tool_call_id)
        self._feed.approvals.refuse(tool_call_id, "The call was stopped.")

    def _expand(self, tool_call_id: str) -> None:
        text = self._feed.cards.full_result(tool_call_id)
        if text is None:
            items = self._feed.transcript.items
            item = next((i for i in items if i.get("tool_call_id") == tool_call_id), None)
            text = str(item.get("text", "")) if item is not None else ""
        self.send({"type": "expanded", "tool_call_id": tool_call_id, "text": text})

    # --- text fallbacks --------------------------------------------------------------------------

    def transcript_text(self) -> str:
        """The run as plain text: a header line, then each message."""
        return run_text(
            status=self._status(),
            stalled_ms=self._feed.stalled,
            model=self._feed.head.model,
            usage=self._feed.head.usage,
            budget=self._feed.head.budget,
            items=self._feed.transcript.items,
            live=self._feed.transcript.current(self._feed.head.model),
            error=self.error,
            notice=self.notice,
        )

    def transcript_html(self) -> str:
        """The run as simple, static HTML (no scripts, no widget needed)."""
        head = self.transcript_text().splitlines()[0]
        return run_html(head, self._feed.transcript.items, self.error)

    def _fallbacks(self) -> tuple[str, str]:
        return self.transcript_text(), self.transcript_html()
