"""Several cell changes of one reply, reviewed together before any of them lands.

When one reply of the model asks for two or more cell writes (``insert_cell``, ``edit_cell``,
``delete_cell``), the user sees them on one card and accepts or rejects each; nothing is written
until every one is decided. The calls of a reply reach the approval hook one at a time (the write
tools run sequentially), so the reply's calls are noted when the reply ends
(:meth:`ReplyChanges.note_reply`), the first write call's hook asks about all of them at once,
and the later calls' hooks take their decision without asking again.

Each call's result tells the model what the user decided about it: an accepted change's result
starts with a line saying so, a rejected one is an error result saying it was rejected and that
the notebook is unchanged by it. ``run_cell`` keeps its own card: running a cell is not a change
to the document, and it may depend on what the changes before it did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ...ai.types import AssistantMessage, ToolCall
from ..widgets.protocol import ApprovalPreview
from .document import DocumentError, NotebookNotConnected
from .edit_tools import WriteTools

__all__ = ["REVIEWED_TOOL_NAMES", "Decision", "ReplyChanges", "review_words"]

REVIEWED_TOOL_NAMES = ("insert_cell", "edit_cell", "delete_cell")

AskReview: TypeAlias = Callable[
    [list[tuple[str, str, Mapping[str, Any], ApprovalPreview]], float | None],
    Awaitable[dict[str, bool] | None],
]
"""``RunView.request_review``: the changes, the timeout → ``{call id: accepted}`` or None."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the user decided about one reviewed call, in the words its result gives."""

    accepted: bool
    words: str


def review_words(accepted: bool, total: int, accepted_count: int) -> str:
    """The sentence a reviewed call's result gives the model."""
    rejected_count = total - accepted_count
    tally = f"one of {total} changes reviewed together: {accepted_count} accepted, "
    tally += f"{rejected_count} rejected"
    if accepted:
        return f"The user accepted this change ({tally})."
    return f"The user rejected this change ({tally}); the notebook is unchanged by it."


@dataclass
class ReplyChanges:
    """The cell writes of the model's latest reply, and the decisions taken on them."""

    _calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    """``(call id, tool name, arguments)`` of the latest reply's write calls, in reply order."""
    _decided: dict[str, Decision] = field(default_factory=dict)

    def note_reply(self, message: AssistantMessage) -> None:
        """A reply ended: its write calls (valid arguments only) are the next batch."""
        self._decided.clear()
        self._calls = []
        for block in message.content:
            if isinstance(block, ToolCall) and block.name in REVIEWED_TOOL_NAMES:
                args = WriteTools.valid_args(block.name, dict(block.arguments))
                if args is not None and block.arguments_error is None:
                    self._calls.append((block.id, block.name, args))

    def take(self, tool_call_id: str) -> Decision | None:
        """The decision already taken on this call (in a review that listed it), once."""
        return self._decided.pop(tool_call_id, None)

    async def review(
        self,
        tool_call_id: str,
        tools: WriteTools,
        ask: AskReview,
        timeout: float | None,
    ) -> Decision | None:
        """Review ``tool_call_id`` with the reply's later write calls on one card when there
        are two or more that need approval; None when there are not (the call gets the
        single-change card). A change whose preview fails (its cell is gone), or that changes
        nothing the cell runs (:meth:`WriteTools.unchanged`), is left out: its own call reports
        why."""
        ids = [call_id for call_id, _name, _args in self._calls]
        if tool_call_id not in ids:
            return None
        pending = [
            call for call in self._calls[ids.index(tool_call_id) :] if tools.needs_approval(call[1])
        ]
        if len(pending) < 2:
            return None
        changes: list[tuple[str, str, Mapping[str, Any], ApprovalPreview]] = []
        inserted = False
        for call_id, name, args in pending:
            if await tools.unchanged(name, args) is not None:
                continue  # refused without asking: its own call says why
            try:
                preview = await tools.preview(name, args, follows_insert=inserted)
            except (DocumentError, NotebookNotConnected):
                continue
            inserted = inserted or name == "insert_cell"
            changes.append((call_id, name, args, preview))
        if len(changes) < 2 or changes[0][0] != tool_call_id:
            return None
        answers = await ask(changes, timeout)
        if answers is None:
            words = (
                f"Nobody reviewed the {len(changes)} proposed changes within "
                f"{timeout or 0:.0f} s; none was applied and the notebook is unchanged."
            )
            for call_id, *_rest in changes:
                self._decided[call_id] = Decision(False, words)
        else:
            accepted_count = sum(answers.values())
            for call_id, *_rest in changes:
                accepted = answers.get(call_id, False)
                words = review_words(accepted, len(changes), accepted_count)
                self._decided[call_id] = Decision(accepted, words)
        return self.take(tool_call_id)
