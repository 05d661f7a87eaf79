"""The run view's questions to the user: one tool call's approval on its card, several changes
decided on one review card, and the answers (clicks, the approval policy, a stop)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Literal, cast

from .protocol import ApprovalPreview, ApprovalState, ChangeReview, ReviewChange
from .tool_cards import ToolCards

__all__ = ["Approvals"]


class Approvals:
    """The approvals pending on the cards of ``cards`` and the review card (``review``, the
    ``review`` trait); ``mark`` is told which traits changed."""

    def __init__(self, cards: ToolCards, mark: Callable[..., None]) -> None:
        self._cards = cards
        self._mark = mark
        self._futures: dict[str, asyncio.Future[bool]] = {}
        self._always: set[str] = set()
        self.review: ChangeReview | None = None
        self._review_future: asyncio.Future[None] | None = None
        self._reviews = 0

    @property
    def pending(self) -> bool:
        """The run waits for the user: a review, or an approval not answered yet."""
        return self.review is not None or any(not f.done() for f in self._futures.values())

    def answered_always(self, tool_call_id: str) -> bool:
        return tool_call_id in self._always

    async def request(
        self,
        tool_call_id: str,
        tool_name: str,
        args: Mapping[str, Any],
        timeout: float | None = None,
        preview: ApprovalPreview | None = None,
    ) -> bool | None:
        """Ask on the call's card (see ``RunView.request_approval``)."""
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive or None, got {timeout!r}")
        if tool_call_id in self._futures:
            raise RuntimeError(f"an approval for tool call {tool_call_id!r} is already pending")
        cards = self._cards
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._futures[tool_call_id] = future
        if preview is not None:
            cards.previews[tool_call_id] = preview
        if tool_call_id not in cards.running:
            cards.open(tool_call_id, tool_name, args)
        cards.set_approval(tool_call_id, "pending", timeout)
        try:
            if timeout is None:
                return await future
            try:
                return await asyncio.wait_for(future, timeout)
            except TimeoutError:
                cards.set_approval(tool_call_id, "timed_out", timeout)
                return None
        except asyncio.CancelledError:
            cards.set_approval(tool_call_id, "cancelled", timeout)
            raise
        finally:
            self._futures.pop(tool_call_id, None)
            self._mark("status")

    async def request_review(
        self,
        changes: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]],
        timeout: float | None = None,
    ) -> dict[str, bool] | None:
        """Ask on one card for several changes (see ``RunView.request_review``)."""
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive or None, got {timeout!r}")
        if self.review is not None:
            raise RuntimeError("a review is already pending")
        cards = self._cards
        self._reviews += 1
        review: ChangeReview = {"id": f"review-{self._reviews}", "timeout": timeout, "changes": []}
        for tool_call_id, tool_name, args, preview in changes:
            cards.previews[tool_call_id] = preview
            if tool_call_id not in cards.running:
                cards.open(tool_call_id, tool_name, args)
            review["changes"].append(
                {
                    "tool_call_id": tool_call_id,
                    "tool_name": tool_name,
                    "preview": preview,
                    "decision": "pending",
                }
            )
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.review, self._review_future = review, future
        for change in review["changes"]:
            cards.set_approval(change["tool_call_id"], "pending", timeout, review=True)
        self._mark("review", "status")
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

    def note_policy(
        self, tool_call_id: str, tool_name: str, args: Mapping[str, Any], *, allowed: bool
    ) -> None:
        """Show on the call's card that the approval policy answered for the user."""
        cards = self._cards
        if tool_call_id not in cards.running and tool_call_id not in cards.finished:
            cards.open(tool_call_id, tool_name, args)
        verdict = "allow" if allowed else "deny"
        reason = f"By the approval policy (%approve {tool_name} {verdict})."
        cards.set_approval(tool_call_id, "allowed" if allowed else "denied", None, reason)

    # --- answers ---------------------------------------------------------------------------------

    def answer(self, tool_call_id: str, allow: bool, *, always: bool = False) -> None:
        """A click on a card's Allow or Deny (``always``: "always allow for this session")."""
        future = self._futures.get(tool_call_id)
        if future is None or future.done():
            return  # answered already, timed out, or the run moved on: the card says which
        preview = self._cards.previews.get(tool_call_id)
        always = allow and always and preview is not None and preview["always"]
        if always:
            self._always.add(tool_call_id)
        reason = "Always allowed for this session." if always else ""
        self._settle(tool_call_id, future, allow, reason)

    def refuse(self, tool_call_id: str, reason: str) -> None:
        """Deny the approval a call waits for, if any (its card's stop)."""
        future = self._futures.get(tool_call_id)
        if future is not None and not future.done():
            self._settle(tool_call_id, future, False, reason)

    def settle(self, allow: bool, reason: str) -> None:
        """Answer every open question at once (a stop or the run's end: ``allow`` False)."""
        self._close_review("allowed" if allow else "denied", None, reason)
        for tool_call_id, future in list(self._futures.items()):
            if not future.done():
                self._settle(tool_call_id, future, allow, reason)

    def _settle(
        self, tool_call_id: str, future: asyncio.Future[bool], allow: bool, reason: str
    ) -> None:
        timeout = self._cards.timeout(tool_call_id)
        self._cards.set_approval(tool_call_id, "allowed" if allow else "denied", timeout, reason)
        future.set_result(allow)

    def decide(self, review_id: str, accept: bool, tool_call_id: str | None) -> None:
        """A click on the review card: one change (``tool_call_id``) or all undecided ones."""
        review = self.review
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
        self._mark("review")
        if all(c["decision"] != "pending" for c in changes):
            self._close_review(None, review["timeout"], "")

    def _close_review(
        self, state: ApprovalState | None, timeout: float | None, reason: str
    ) -> None:
        """End the pending review: every change decided (``state`` None), or not (timed out,
        cancelled, denied: undecided changes are rejected, and none is applied)."""
        review, future = self.review, self._review_future
        if review is None or future is None:
            return
        self.review, self._review_future = None, None
        if state is not None:  # not decided to the end: nothing of it is applied
            review["changes"] = [
                cast(ReviewChange, {**c, "decision": "rejected"}) for c in review["changes"]
            ]
        total = len(review["changes"])
        accepted = sum(c["decision"] == "accepted" for c in review["changes"])
        for change in review["changes"]:
            call = change["tool_call_id"]
            if state is not None:
                self._cards.set_approval(call, state, timeout, reason, review=True)
                continue
            words = f"Decided in a review of {total} changes ({accepted} accepted)."
            final: ApprovalState = "allowed" if change["decision"] == "accepted" else "denied"
            self._cards.set_approval(call, final, timeout, words, review=True)
        if not future.done():
            future.set_result(None)
        self._mark("review", "status")
