"""The restore offered after a move: plan it, show the card, apply it on Allow, record it.

The move and the offer are one operation of the kernel's queue (:func:`move_with_restore`),
so a ``%%agent`` queued after the move starts only once the card is answered and sees the
namespace as the answer left it. Before the move, the namespace is checkpointed at the entry
being left: the card compares the node's checkpoint with it, and moving back there later
restores it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from .flow import CUSTOM_TYPE, Restorer
from .plan import RestorePlan

if TYPE_CHECKING:
    from ..checkpoints.store import Manifest
    from ..kernel_agent import NotebookAgent
    from ..widgets.restore_view import CardSlot

__all__ = [
    "CARD_TIMEOUT",
    "capture_now",
    "deny_when_a_run_starts",
    "move_with_restore",
    "offer_restore",
]

CARD_TIMEOUT = 300.0
"""Seconds a card waits for an answer; then it is taken as a "no" (nothing changes)."""
RUN_POLL_SECONDS = 0.25


async def capture_now(agent: NotebookAgent) -> Manifest | str | None:
    """A checkpoint of the namespace at the session's leaf, written before it returns; None
    while checkpoints are off, the problem's words when it failed."""
    checkpoints = agent.checkpoints
    if not checkpoints.enabled:
        return None
    await checkpoints.settled()  # those being written first: a capture is never dropped here
    report = await checkpoints.capture("manual")
    if report is None:
        return "checkpoints are busy or off"
    return report.manifest if report.manifest is not None else (report.problem or "it failed")


def _restorer(agent: NotebookAgent) -> Restorer:
    from ..notebook_tools import _run_code

    checkpoints = agent.checkpoints
    return Restorer(
        session=agent.session,
        namespace=agent.namespace,
        document=agent.document,
        store=checkpoints.store if checkpoints.enabled else None,
        run_code=_run_code,
    )


async def offer_restore(
    agent: NotebookAgent,
    slot: CardSlot,
    from_id: str | None,
    to_id: str,
    now: Manifest | str | None,
    *,
    explicit: bool,
    timeout: float | None = CARD_TIMEOUT,
) -> str:
    """Offer the restore of a move from ``from_id`` to ``to_id`` on ``slot``'s card; the words
    say how it ended. ``explicit``: the user asked for it (``%fork --restore``), so a card with
    nothing to approve still says why."""
    restorer = _restorer(agent)
    plan = await restorer.plan(from_id, to_id, now)
    if not plan.worth_asking:
        if not explicit and not (plan.checkpoint is not None and plan.refusal):
            return ""  # after "Continue from here" a card shows only what needs an answer
        words = plan.refusal or "Nothing to restore: the variables and cells are as they were."
        slot.card = plan.card()
        slot.finish("refused" if plan.refusal else "done", words)
        return words
    if explicit:
        reply = await slot.ask(plan.card(), timeout)
    else:
        watch = asyncio.ensure_future(deny_when_a_run_starts(slot, agent.runs))
        try:
            reply = await slot.ask(plan.card(), timeout)
        finally:
            watch.cancel()
    if reply is None and slot.card is not None and slot.card["state"] == "denied":
        return slot.card["result"]
    if reply is None or not reply["allow"]:
        words = "Restore denied: the variables and the notebook were left as they were."
        slot.finish("denied", words)
        return words
    try:
        result = await restorer.apply(plan, revert_document=reply.get("revert_document", True))
    except Exception as exc:  # the card must not stay "Restoring…": say what failed
        words = f"The restore failed: {type(exc).__name__}: {exc}"
        slot.finish("refused", words)
        raise
    if result.done:
        from ...harness.session import SessionWriteError

        # a failed write keeps the entry in memory (``unsaved_entries``), as for the summary
        with contextlib.suppress(SessionWriteError):
            agent.session.append_custom_message(
                CUSTOM_TYPE, result.message, display=True, details=result.details
            )
        agent.refresh_tree_views()
    slot.finish("done" if result.done else "refused", result.words)
    return result.words


async def deny_when_a_run_starts(slot: CardSlot, runs: Sequence[object]) -> None:
    """The tree's card is answered "no" when an ``%%agent`` run is started before it is
    answered: the card would otherwise hold that run back (it waits in the queue behind it)."""
    started = len(runs)
    while len(runs) == started:
        await asyncio.sleep(RUN_POLL_SECONDS)
    slot.finish(
        "denied",
        "An %%agent run started before the card was answered, so nothing was restored; the "
        "variables and the notebook are as they were.",
    )


def move_with_restore(
    agent: NotebookAgent,
    slot: CardSlot,
    move: Callable[[], Awaitable[str | None]],
    *,
    explicit: bool,
) -> tuple[asyncio.Future[str | None], asyncio.Future[str]]:
    """Queue the checkpoint, ``move`` (which returns the entry moved to, or None when the
    move did not happen) and the offer as one operation. Returns a future that resolves when
    the move is done (with the entry; None when it did not happen or failed) and one for the
    whole operation (the offer's words, or the error)."""
    loop = asyncio.get_running_loop()
    moved: asyncio.Future[str | None] = loop.create_future()

    async def operation() -> str:
        try:
            left = agent.session.leaf_id
            now = await capture_now(agent)
            where = await move()
        except BaseException:
            if not moved.done():
                moved.set_result(None)  # the whole operation's future carries the error
            raise
        moved.set_result(where)
        if where is None:
            if explicit:  # the card says so rather than "preparing…" for ever
                words = "The move did not happen, so there is nothing to restore."
                slot.card = RestorePlan(target_id="", target_title="?", refusal=words).card()
                slot.finish("refused", words)
            return ""
        if where == left and not explicit:
            return ""
        return await offer_restore(agent, slot, left, where, now, explicit=explicit)

    return moved, agent.enqueue(operation)
