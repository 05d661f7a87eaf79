"""When the harness compacts on its own, decided as pi-coding-agent 1.6 decides it.

pi 1.6 checks at three moments, and so does the harness: after a run (its last reply), before a
prompt (the branch's last reply, aborted ones included: an aborted reply is skipped after its
run but its usage still counts here), and — new in 1.6 — before the next request of a running
turn, when the projected size of the context (``estimate_projected_context_tokens``) is over the
threshold. The threshold is ``context_window - reserve_tokens``; a context larger than it, not
equal to it, compacts.

``check_compaction`` is pi's ``_checkCompaction`` over a reply:

- **Overflow** (the model's context could not hold the request): an error whose text says so
  (pi-ai 1.6's patterns, ``is_context_overflow``), a successful reply whose prompt was larger
  than the window, or a ``length`` stop with no output and the window filled; and a ``length``
  stop below the model's output limit (``is_recoverable_length``: the reply may have been cut
  short by the context). Only replies of the current model count, and only while they are part
  of the context (not hidden by a context edit, not older than the latest compaction). A reply
  that stopped normally is compacted but not retried (it is complete); any other is hidden from
  future contexts by a context edit (with its tool results), the branch is compacted, and the
  request is sent again — once: a second overflow before a successful reply reports that the
  recovery failed and stops.
- **Threshold**: the reply's own usage against the threshold; with a context edit in the
  context, the projected estimate; after a failed or usage-less reply, the estimate from the
  last usable usage (no compaction when that usage is older than the latest compaction). The
  threshold case never retries.

The functions here only decide; the harness writes the entries and emits the events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..ai.overflow import is_context_overflow, is_recoverable_length
from ..ai.types import AssistantMessage, Model
from .compaction import CompactionSettings, has_projected_context_edit, should_compact
from .entries import CompactionEntry, ContextEditEntry, MessageEntry, SessionEntry, iso_to_ms
from .session import Session
from .token_estimates import TokenEstimates
from .tokens import (
    ContextTokenEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
)

__all__ = [
    "RECOVERY_FAILED_LENGTH",
    "RECOVERY_FAILED_OVERFLOW",
    "CompactionCheck",
    "check_compaction",
    "entry_index_of",
    "exceeds_threshold",
]

RECOVERY_FAILED_OVERFLOW = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
"""pi 1.6's ``compaction_end`` error when a retried request overflowed again."""
RECOVERY_FAILED_LENGTH = "Truncated response recovery failed after one compact-and-retry attempt."
"""pi 1.6's ``compaction_end`` error when a retried request was cut short again."""


@dataclass(frozen=True, slots=True)
class CompactionCheck:
    """What to do about a reply: compact for ``reason``; ``will_retry``: hide the reply, compact
    and send the request again; ``recovery_failed``: do not compact, report this error (the
    retry already happened)."""

    reason: Literal["threshold", "overflow"]
    will_retry: bool = False
    recovery_failed: str | None = None


def entry_index_of(branch: Sequence[SessionEntry], message: object) -> int:
    """Where ``message`` is on ``branch`` (the entry holding that very object, else an equal
    message, newest first); -1 when it was not written."""
    for index in range(len(branch) - 1, -1, -1):
        entry = branch[index]
        if isinstance(entry, MessageEntry) and entry.message is message:
            return index
    for index in range(len(branch) - 1, -1, -1):
        entry = branch[index]
        if isinstance(entry, MessageEntry) and entry.message == message:
            return index
    return -1


def _latest_compaction(branch: Sequence[SessionEntry]) -> int:
    return next(
        (i for i in range(len(branch) - 1, -1, -1) if isinstance(branch[i], CompactionEntry)), -1
    )


def _is_projected(branch: Sequence[SessionEntry], index: int) -> bool:
    """Whether the entry at ``index`` contributes to the context at the end of ``branch``:
    after the latest compaction or among the entries it keeps, and not hidden by the latest
    context edit of it among those."""
    start = 0
    latest = _latest_compaction(branch)
    if latest >= 0:
        compaction = branch[latest]
        assert isinstance(compaction, CompactionEntry)
        kept = next(
            (i for i in range(latest) if branch[i].id == compaction.first_kept_entry_id), latest
        )
        if kept <= index < latest or index > latest:
            start = kept
        else:
            return False
    target = branch[index].id
    edit = None
    for entry in branch[start:]:
        if isinstance(entry, ContextEditEntry) and entry.target_id == target:
            edit = entry
    return edit is None or edit.replacement is not None


def _older_than_compaction(
    reply: AssistantMessage, branch: Sequence[SessionEntry], index: int
) -> bool:
    """pi: the reply's timestamp is not after the latest compaction's. By position when the
    reply is on the branch (replies within the same millisecond as a compaction are common
    with fast models), by timestamp otherwise."""
    latest = _latest_compaction(branch)
    if latest < 0:
        return False
    if index >= 0:
        return index < latest
    try:
        return reply.timestamp <= iso_to_ms(branch[latest].timestamp or "")
    except ValueError:
        return False


def check_compaction(
    reply: AssistantMessage,
    session: Session,
    model: Model,
    settings: CompactionSettings,
    *,
    recovery_attempted: bool,
    skip_aborted: bool = True,
    estimates: TokenEstimates | None = None,
) -> CompactionCheck | None:
    """pi 1.6's ``_checkCompaction``: what automatic compaction ``reply`` calls for, if any
    (see the module docstring). ``recovery_attempted``: an overflow was already compacted and
    retried since the last successful reply; ``skip_aborted``: ignore an aborted reply (after a
    run; the check before a prompt includes it)."""
    if not settings.enabled:
        return None
    if skip_aborted and reply.stop_reason == "aborted":
        return None
    same_model = reply.provider == model.provider and reply.model == model.id
    window = model.context_window
    branch = session.get_branch()
    index = entry_index_of(branch, reply)
    if _older_than_compaction(reply, branch, index):
        return None

    projected = index < 0 or _is_projected(branch, index)
    after = branch[index + 1 :] if index >= 0 else []
    edited_after = any(isinstance(entry, ContextEditEntry) for entry in after)
    if index >= 0:
        target = branch[index].id
        own_edits = [e for e in after if isinstance(e, ContextEditEntry) and e.target_id == target]
        retained = not any(isinstance(e, CompactionEntry) for e in after) and (
            not own_edits or own_edits[-1].replacement is not None
        )
    else:
        retained = True
    explicit = reply.stop_reason == "error" and is_context_overflow(reply)
    overflow = same_model and (
        (explicit and retained)
        or (projected and not edited_after and is_context_overflow(reply, window))
    )
    truncated = same_model and projected and is_recoverable_length(reply, model.max_tokens)
    if overflow or truncated:
        will_retry = reply.stop_reason != "stop"
        if not will_retry:
            return CompactionCheck("overflow")
        if recovery_attempted:
            failed = RECOVERY_FAILED_OVERFLOW if overflow else RECOVERY_FAILED_LENGTH
            return CompactionCheck("overflow", recovery_failed=failed)
        return CompactionCheck("overflow", will_retry=True)

    tokens = _threshold_tokens(reply, session, branch, estimates)
    if tokens is not None and should_compact(tokens, window, settings):
        return CompactionCheck("threshold")
    return None


def _threshold_tokens(
    reply: AssistantMessage,
    session: Session,
    branch: Sequence[SessionEntry],
    estimates: TokenEstimates | None,
) -> int | None:
    """The context size pi 1.6 compares with the threshold for ``reply``: with a context edit
    in the context, the projected estimate; after a failed or usage-less reply, the estimate
    from the last usable usage (``None`` when that usage predates the latest compaction); else
    the reply's own usage."""
    messages = session.build_context().messages
    if has_projected_context_edit(branch):
        return _projected(messages, branch, estimates).tokens
    direct = calculate_context_tokens(reply.usage)
    if reply.stop_reason != "error" and direct > 0:
        return direct
    context = (
        estimate_context_tokens(messages) if estimates is None else estimates.context(messages)
    )
    latest = _latest_compaction(branch)
    if context.last_usage_index is not None and latest >= 0:
        measured = messages[context.last_usage_index]
        try:
            compacted_at = iso_to_ms(branch[latest].timestamp or "")
        except ValueError:
            compacted_at = None
        if (
            compacted_at is not None
            and isinstance(measured, AssistantMessage)
            and measured.timestamp <= compacted_at
        ):
            return None  # usage of the context before the compaction
    return context.tokens


def _projected(
    messages: Sequence[object], branch: Sequence[SessionEntry], estimates: TokenEstimates | None
) -> ContextTokenEstimate:
    if estimates is None:
        return estimate_projected_context_tokens(messages, branch)
    return estimates.projected(messages, branch)


def exceeds_threshold(
    session: Session,
    model: Model,
    settings: CompactionSettings,
    messages: Sequence[object] | None = None,
    estimates: TokenEstimates | None = None,
) -> bool:
    """Whether the next request of a running turn should wait for a compaction (pi 1.6's
    ``_compactBeforeNextAssistantResponse``): the projected size of the session's context
    (``messages``, when the caller built it already) over ``context_window - reserve_tokens``.
    A model without a known window never compacts here. ``estimates``: a harness's
    :class:`~pi_notebook.harness.token_estimates.TokenEstimates` (the same figures, kept)."""
    if model.context_window <= 0 or not settings.enabled:
        return False
    if messages is None:
        messages = session.build_context().messages
    branch = session.get_branch()
    tokens = _projected(messages, branch, estimates).tokens
    return should_compact(tokens, model.context_window, settings)
