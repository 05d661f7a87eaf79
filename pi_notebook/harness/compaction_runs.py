"""Compaction as the harness runs it: asked for (``compact``), or on its own account under
pi-coding-agent 1.6's rules (:mod:`~pi_notebook.harness.auto_compaction`) — after a reply, before
the next request of a running turn, and on a context overflow, whose failed attempt is hidden
and sent again once. The summary itself is :mod:`~pi_notebook.harness.compaction`'s."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from ..ai.abort import AbortSignal
from ..ai.types import AssistantMessage, ToolResultMessage
from .auto_compaction import CompactionCheck, check_compaction, entry_index_of, exceeds_threshold
from .compaction import (
    CompactionError,
    CompactionPreparation,
    CompactionResult,
    compact,
    prepare_compaction,
)
from .configuration import HarnessParts
from .entries import CompactionEntry, MessageEntry
from .harness_events import (
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    SessionCompactEvent,
)
from .hooks import (
    AgentHarnessError,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    as_harness_error,
)
from .token_estimates import TokenEstimates
from .tokens import estimate_tokens

__all__ = ["CompactionRunner"]

_log = logging.getLogger(__name__)

_CANCELLED = "Compaction cancelled"
_AUTO_FAILED = {
    "threshold": "Auto-compaction failed",
    "overflow": "Context overflow recovery failed",
}
"""How pi 1.6 words a failed automatic compaction on ``compaction_end``."""


class CompactionRunner:
    """``while_compacting()`` enters the harness's ``compaction`` phase for an automatic
    compaction inside a run and returns how to leave it; ``queued()`` says whether messages
    wait for a run."""

    def __init__(
        self,
        parts: HarnessParts,
        while_compacting: Callable[[], Callable[[], None]],
        queued: Callable[[], bool],
    ) -> None:
        self._config = parts.config
        self._writer = parts.writer
        self._session = parts.writer.session
        self._hooks = parts.hooks
        self._emit = parts.emit
        self._while_compacting = while_compacting
        self._queued = queued
        self.recovery_attempted = False
        self._estimates = TokenEstimates()
        """Each context message's token estimate (sized again before every request)."""
        self.defer_threshold = False
        """See ``AgentHarness.defer_threshold_compaction``."""
        """An overflowed request was compacted and sent again since the last good reply."""

    def over_threshold(self, messages: Sequence[object]) -> bool:
        """Whether the context ``messages`` is over the threshold (before a request)."""
        config = self._config
        return exceeds_threshold(
            self._session, config.model, config.compaction, messages, self._estimates
        )

    async def check_and_compact(
        self,
        reply: AssistantMessage,
        signal: AbortSignal,
        *,
        skip_aborted: bool = True,
        defer_threshold: bool = False,
    ) -> bool:
        """pi 1.6's ``_checkCompaction`` for ``reply`` (:func:`check_compaction`), acted on:
        returns whether another run should follow (an overflow to retry, or queued messages
        after a compaction). ``defer_threshold``: a compaction for size alone is left for
        later (the harness's ``defer_threshold_compaction``)."""
        check: CompactionCheck | None = check_compaction(
            reply,
            self._session,
            self._config.model,
            self._config.compaction,
            recovery_attempted=self.recovery_attempted,
            skip_aborted=skip_aborted,
            estimates=self._estimates,
        )
        if check is None or (defer_threshold and check.reason == "threshold"):
            return False
        if check.recovery_failed is not None:
            _log.warning("automatic compaction: %s", check.recovery_failed)
            await self._emit(
                CompactionEndEvent(reason="overflow", error_message=check.recovery_failed)
            )
            return False
        if check.will_retry:
            self.recovery_attempted = True
            self._omit_recovery_attempt(reply)
        return await self.auto_compact(check.reason, signal, will_retry=check.will_retry)

    def _omit_recovery_attempt(self, reply: AssistantMessage) -> None:
        """Hide a failed attempt (the reply and the results of its tool calls) from future
        contexts with context edits, as pi 1.6 does before it retries; the raw history keeps
        them."""
        branch = self._session.get_branch()
        index = entry_index_of(branch, reply)
        if index < 0:
            return
        call_ids = {block.id for block in reply.content if block.type == "toolCall"}
        targets = [branch[index].id]
        for entry in branch[index + 1 :]:
            if not isinstance(entry, MessageEntry):
                continue
            message = entry.message
            if isinstance(message, AssistantMessage):
                break
            if isinstance(message, ToolResultMessage) and message.tool_call_id in call_ids:
                targets.append(entry.id)
        for target in targets:
            self._writer.persist(partial(self._session.append_context_edit, target, None))

    async def auto_compact(
        self, reason: CompactionReason, signal: AbortSignal, *, will_retry: bool
    ) -> bool:
        """Compact on the harness's own account (pi 1.6's ``_runAutoCompaction``): nothing at
        all when there is nothing to compact; a failure is reported on ``compaction_end`` and
        logged, never raised. Returns whether another run should follow: ``will_retry`` after
        a compaction that succeeded, or messages queued meanwhile."""
        branch = self._session.get_branch()
        preparation = prepare_compaction(
            branch, self._config.compaction, self._session.build_context().messages
        )
        if preparation is None:
            return False
        leave = self._while_compacting()
        try:
            await self.compact_now(
                reason, None, signal, will_retry=will_retry, preparation=preparation
            )
        except AgentHarnessError as exc:
            _log.warning("automatic compaction (%s) failed: %s", reason, exc)
            return False
        finally:
            leave()
        return will_retry or self._queued()

    async def compact_now(
        self,
        reason: CompactionReason,
        custom_instructions: str | None,
        signal: AbortSignal,
        *,
        will_retry: bool = False,
        preparation: CompactionPreparation | None = None,
    ) -> CompactionResult:
        """Compact the branch, between ``compaction_start`` and ``compaction_end``; a failure
        raises ``AgentHarnessError`` after its ``compaction_end``."""
        before = preparation.tokens_before if preparation is not None else None
        await self._emit(CompactionStartEvent(reason=reason, tokens_before=before))
        try:
            result = await self._produce(custom_instructions, signal, preparation)
        except Exception as exc:
            error = as_harness_error(exc, "compaction")
            aborted = signal.aborted or (isinstance(exc, CompactionError) and exc.code == "aborted")
            message: str | None = str(error)
            if reason != "manual":  # pi 1.6's wording; a cancelled one (a hook) has none
                aborted = aborted or message == _CANCELLED
                message = None if aborted else f"{_AUTO_FAILED[reason]}: {message}"
            end = CompactionEndEvent(reason=reason, aborted=aborted, error_message=message)
            try:
                await self._emit(end)
            except AgentHarnessError:
                _log.exception("a listener failed on compaction_end")
            raise error from exc
        after = sum(estimate_tokens(m) for m in self._session.build_context().messages)
        await self._emit(
            CompactionEndEvent(
                reason=reason, result=result, will_retry=will_retry, tokens_after=after
            )
        )
        return result

    async def _produce(
        self,
        custom_instructions: str | None,
        signal: AbortSignal,
        preparation: CompactionPreparation | None = None,
    ) -> CompactionResult:
        config = self._config
        session = self._session
        api_key = await config.summary_api_key()
        branch = session.get_branch()
        if preparation is None:  # an explicit compact(): pi 0.79's harness compacts even a
            # branch with nothing to summarise (its golden); automatic ones come prepared
            context = session.build_context().messages
            preparation = prepare_compaction(branch, config.compaction, context, allow_empty=True)
        if preparation is None:
            raise AgentHarnessError("compaction", "Nothing to compact")
        event = SessionBeforeCompactEvent(preparation, branch, custom_instructions, signal)
        hook = await self._hooks.run("session_before_compact", event, SessionBeforeCompactResult)
        if hook is not None and hook.cancel:
            raise AgentHarnessError("compaction", _CANCELLED)
        provided = None if hook is None else hook.compaction
        if provided is not None:
            result = provided
        else:
            result = await compact(
                preparation,
                config.model,
                api_key=api_key,
                headers=config.stream_options.headers,
                custom_instructions=custom_instructions,
                signal=signal,
                thinking_level=config.thinking_level,
                stream_fn=config.summary_stream_fn(),
            )
        from_hook = provided is not None
        entry = self._writer.persist(
            lambda: session.append_compaction(
                result.summary,
                result.first_kept_entry_id,
                result.tokens_before,
                result.details,
                from_hook=from_hook,
            )
        )
        assert isinstance(entry, CompactionEntry)
        await self._emit(SessionCompactEvent(compaction_entry=entry, from_hook=from_hook))
        return result
