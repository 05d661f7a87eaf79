"""The live run of the notebook agent: its prompt handed to the harness with the steering queued
meanwhile, the messages sent while it streams (``%steer``, ``%follow_up``, the view's box),
``%abort``, the one follow-up asking a run for its answer, the stop when a compaction cannot make
room, and the compaction after it.

The agent's operation queue decides when a run starts (:mod:`.operations`); from then on
:class:`RunDriver` has it until its reply is out.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from .change_feed import kernel_count
from .room import request_size
from .save_notices import SaveNotices

if TYPE_CHECKING:
    from ..agent import AgentMessage
    from ..ai.types import AssistantMessage
    from ..harness.hooks import ContextEvent, ContextResult, FinishTurnEvent, ToolResultEvent
    from .kernel_agent import NotebookAgent
    from .runs import Run

__all__ = ["RunDriver"]


class RunDriver:
    """The runs of ``agent``: the one streaming now (:attr:`active`) and the messages for it."""

    def __init__(self, agent: NotebookAgent) -> None:
        self._agent = agent
        self.active: Run | None = None
        """The run streaming now, if any."""
        self.save_notices = SaveNotices()
        self._tool_results = 0
        """Tool results in the live run."""
        self._answer_asked = False
        """Whether the live run was asked to state its answer (once a run)."""
        self._numbers_asked = False
        """Whether the live run was asked to compute the numbers it stated (once a run)."""
        self._sent: list[AgentMessage] = []
        """The messages of the live run's latest model request (:meth:`on_context`)."""
        self._unsupported_asked = False
        """Whether the live run was asked to print numbers it was not shown (once a run)."""
        self._last_failed = False
        """Whether the live run's latest tool result was an error."""
        self._guesses: list[AssistantMessage] = []
        """Replies of the live run sent back for numbers not computed from the data: kept in
        the session, left out of what the model is sent next (:meth:`on_context`)."""
        self._withheld: list[str] | None = None
        """The tools active before :meth:`withhold_tools` took them away for the live run."""

    # --- a run -----------------------------------------------------------------------------------

    async def prompt(self, run: Run, text: str) -> AssistantMessage | None:
        """Hand ``text`` to the harness as ``run``'s prompt (its first, or a follow-up in its
        view) and stream it into ``run``'s view."""
        agent = self._agent
        harness = agent.harness
        run.state = "running"
        run.view.set_model(harness.model, harness.thinking_level)
        run.view.set_context_tokens(request_size(harness, text))
        unsubscribe = harness.subscribe(run.view.handle)
        unwatch = harness.subscribe(lambda event: self._watch_run(run, event))
        self.active = run
        self.note_writes(run)  # e.g. the change summary just before could not be written
        agent.write_tools.begin_run(run.number, run.cell_id)
        agent.repeat_guard.begin_run()
        self._tool_results, self._answer_asked, self._numbers_asked = 0, False, False
        self._guesses, self._sent, self._unsupported_asked = [], [], False
        self._last_failed = False
        offer = agent.tool_offer
        run.view.set_answers_only(not offer.model_calls_tools())
        connected = agent.document.connected
        target = self._cell_words(run.edit_cell) if connected and run.edit_cell else ""
        run.view.set_code_actions(insert=connected, edit_target=target)
        if offer.pushed != [t.name for t in offer.offered_tools()]:
            offer.push()  # a frontend connected or went away, or the model changed
        try:
            # the run's view hears of stalls (``StreamOptions.on_stall``) until the run ends
            harness.stream_options = dataclasses.replace(
                harness.stream_options, on_stall=run.view.note_stall, stall_ms=agent.stall_ms
            )
            from ..harness.budget import BudgetCaps

            caps = BudgetCaps(**run.budget) if run.budget else None  # type: ignore[arg-type]
            run.budget = {}  # a follow-up in the same view is a new run with the defaults

            def deliver_pending() -> None:
                # Messages sent while the run was queued go in as soon as the harness has the
                # prompt (steering queued before the first model call comes right after it).
                for kind, queued in run.take_pending():
                    (harness.steer if kind == "steer" else harness.follow_up)(queued)

            return await harness.prompt(text, budget=caps, on_start=deliver_pending)
        finally:
            harness.stream_options = dataclasses.replace(
                harness.stream_options, on_stall=None, stall_ms=None
            )
            if self._withheld is not None:
                harness.set_active_tools(self._withheld)
                self._withheld = None
            self.active = None
            unsubscribe()
            unwatch()
            self.note_writes(run)
            agent.refresh_tree_views()
            for _kind, late in run.take_pending():  # sent as the run ended: the next prompts
                self.follow_up_in(run, late)
            self._settle_after(run)

    def follow_up_in(self, run: Run, text: str) -> None:
        """The view's box after its run ended: continue in the same view (while another run
        streams, a follow-up of that one)."""
        if self.active is not None:
            self.queue_message("follow_up", text)
            return
        future = self._agent.enqueue(lambda: self.prompt(run, text))
        run.start(lambda _run: future)

    def note_writes(self, run: Run) -> None:
        """Whether ``run``'s view should say that a session write failed, or that it is saved
        after all (:class:`SaveNotices`)."""
        self.save_notices.check(self._agent.session, run.view)

    def _cell_words(self, cell_id: str) -> str:
        """A cell as the "Apply as edit" button names it: its last execution count here."""
        count = kernel_count(self._agent.history, cell_id)
        return f"In [{count}]" if count is not None else f"cell {cell_id[:8]}"

    def _watch_run(self, run: Run, event: object) -> None:
        """A listener of the run's events: a reply's start (``Run.replying``); after each saved
        message, how the file stands; a finished reply's cell writes are noted to be reviewed
        together."""
        kind = getattr(event, "type", None)
        if kind == "message_start":
            from ..ai.types import AssistantMessage

            if isinstance(getattr(event, "message", None), AssistantMessage):
                run.reply_started()
        if kind == "message_end":
            from ..ai.types import AssistantMessage

            message = getattr(event, "message", None)
            if isinstance(message, AssistantMessage):
                self._agent.reply_changes.note_reply(message)
            self._agent.checkpoints.after_message(message)
        if kind in ("message_end", "turn_end", "agent_end"):
            self.note_writes(run)

    def _settle_after(self, run: Run) -> None:
        """Compact after a run if its size calls for it, off the run's path: the run's reply
        is out and ``%%agent --wait`` returns at once; the next queued operation (the next
        run, a ``%model``) waits for the compaction, which shows in ``run``'s view."""
        agent = self._agent
        harness = agent.harness_if_made
        if harness is None or harness.phase != "idle":
            return
        from ..harness import AgentHarnessError

        async def settle() -> None:
            unsubscribe = harness.subscribe(run.view.handle)
            try:
                await harness.settle()
            except AgentHarnessError as exc:  # busy: something else began first
                run.view.note_stopped(f"Compacting after the run failed: {exc}")
            finally:
                unsubscribe()
                self.note_writes(run)
                agent.refresh_tree_views()

        agent.operations.in_background(settle())

    def check_room(self, event: object) -> None:
        """A harness listener: a compaction that left the context over the line stops the live
        run, and the view says what to do (:class:`.room.RoomGuard`)."""
        agent = self._agent
        harness = agent.harness_if_made
        words = None if harness is None else agent.room.after_compaction(harness, event)
        if harness is None or words is None:
            return
        run = self.active or agent.last_run
        if run is not None:
            run.view.note_stopped(words)
        if self.active is not None:
            harness.abort()

    # --- steering --------------------------------------------------------------------------------

    def target_run(self) -> Run | None:
        """The run a steer/follow-up/abort is for: the live one, else the next queued one."""
        if self.active is not None:
            return self.active
        return next((r for r in self._agent.runs if r.state == "queued" and not r.finished), None)

    def queue_message(self, kind: str, text: str) -> bool:
        """A steering (``kind`` "steer") or follow-up message for the live (or next queued)
        run; False when there is none."""
        run = self.target_run()
        if run is None:
            return False
        harness = self._agent.harness_if_made
        if run is self.active and harness is not None and harness.phase != "idle":
            (harness.steer if kind == "steer" else harness.follow_up)(text)
        else:  # the run has not reached the harness yet: it takes them as soon as it does
            run.pending.append((kind, text))
        run.view.note_queued(kind, text)
        return True

    def abort(self) -> bool:
        """Abort the live run (its partial reply is kept) or drop the next queued one, else
        the compaction after the last run; False when there is none of these."""
        agent = self._agent
        harness = agent.harness_if_made
        run = self.target_run()
        if run is None:
            if agent.operations.background_running and harness is not None:
                harness.abort()  # the compaction after the last run
                return True
            return False
        if run is self.active and harness is not None:
            harness.abort()
        else:
            run.cancel_before_start()
        return True

    # --- the answer ------------------------------------------------------------------------------

    def note_tool_result(self, event: ToolResultEvent) -> None:
        """The ``tool_result`` hook: the repeat guard compares results too."""
        from ..ai.types import TextContent

        text = "".join(b.text for b in event.content if isinstance(b, TextContent))
        self._agent.repeat_guard.record(event.tool_call_id, text, failed=event.is_error)
        self._tool_results += 1
        self._last_failed = event.is_error

    def withhold_tools(self) -> None:
        """The model called code again that already gave its result: the rest of the live run
        offers it no tools, so it answers with what it has (the tools come back when the run
        ends)."""
        harness = self._agent.harness_if_made
        if harness is None or self.active is None or self._withheld is not None:
            return
        self._withheld = harness.active_tool_names
        harness.set_active_tools([])

    def on_context(self, event: ContextEvent) -> ContextResult | None:
        """The ``context`` hook: notes what the model is sent (what the numbers check compares
        a reply with) and leaves out the live run's guessed replies. A small model shown its
        own guess copies it into the answer even after the code it then ran printed another
        number; the session and the run view keep the guess."""
        self._sent = event.messages
        if not self._guesses:
            return None
        from ..harness.hooks import ContextResult

        guesses = {id(message) for message in self._guesses}
        return ContextResult([m for m in event.messages if id(m) not in guesses])

    def ask_for_answer(self, event: FinishTurnEvent) -> None:
        """The ``finish_turn`` hook: a run ending with numbers that no code it ran computed
        gets one follow-up asking to compute them (:meth:`_numbers_follow_up`); a run that
        called tools and is ending without its answer stated (no text, or not in the format the
        prompt asked for) gets one asking for it (see :mod:`.answer_check`)."""
        from .answer_check import answer_format, follow_up_text, lacks_answer

        run, harness, message = self.active, self._agent.harness_if_made, event.message
        if run is None or harness is None or self._answer_asked:
            return
        if message.stop_reason in ("error", "aborted") or message.tool_calls:
            return
        numbers = self._numbers_follow_up(run, message)
        if numbers is not None:
            self._guesses.append(message)
            harness.follow_up(numbers)
            return
        if not self._tool_results:
            return
        form = answer_format(run.prompt)
        if lacks_answer(message.text, form):
            self._answer_asked = True
            harness.follow_up(follow_up_text(form))

    def _numbers_follow_up(self, run: Run, message: AssistantMessage) -> str | None:
        """For a reply about data the kernel can reach that states numbers while a code tool
        is offered: once a run, the follow-up when no code has run yet, and once when code ran
        but its latest run failed or the model was not shown some of the numbers."""
        from .answer_check import (
            code_tool_among,
            failed_code_text,
            refers_to_data,
            shown_texts,
            states_numbers,
            unchecked_numbers_text,
            unsupported_numbers,
            unsupported_numbers_text,
        )

        harness = self._agent.harness_if_made
        ran = self._tool_results > 0
        if harness is None or self._withheld is not None or message.stop_reason == "length":
            return None  # without tools it can only answer with what it has; a cut reply
        if (self._unsupported_asked if ran else self._numbers_asked) or not states_numbers(
            message.text
        ):
            return None
        offered = {t.name for t in self._agent.tool_offer.offered_tools(harness.model)}
        code_tool = code_tool_among(offered)
        if code_tool is None or not refers_to_data(run.prompt, self._agent.namespace):
            return None
        if not ran:
            self._numbers_asked = True
            return unchecked_numbers_text(code_tool)
        if self._last_failed:
            self._unsupported_asked = True
            return failed_code_text(code_tool)
        missing = unsupported_numbers(message.text, shown_texts(self._sent))
        if not missing:
            return None
        self._unsupported_asked = True
        return unsupported_numbers_text(missing, code_tool)
