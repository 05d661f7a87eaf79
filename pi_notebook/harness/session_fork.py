"""Which entries a fork copies: the whole session, or the branch to an entry with the labels
its entries carry here."""

from __future__ import annotations

from typing import Literal

from ..ai.types import UserMessage
from .entries import LabelEntry, MessageEntry, SessionEntry, iso_now
from .session_tree import SessionTree

__all__ = ["ForkPosition", "forked_entries"]

ForkPosition = Literal["before", "at"]


def forked_entries(
    tree: SessionTree, entry_id: str | None, position: ForkPosition
) -> list[SessionEntry]:
    """The entries a fork copies (see ``Session.fork``): every entry (``entry_id`` ``None``), the
    branch to ``entry_id`` (``"at"``) or to its parent, a user message (``"before"``), followed
    by label entries that give the copy the labels set off the branch."""
    if entry_id is None:
        return list(tree.entries)
    entry = tree.require(entry_id)
    if position == "before":
        if not (isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)):
            raise ValueError(
                f"fork before entry {entry_id} needs a user message (it is a {entry.type})"
            )
        path = tree.path_to(entry.parent_id)
    elif position == "at":
        path = tree.path_to(entry_id)
    else:
        raise ValueError(f"position must be 'before' or 'at', not {position!r}")
    return [*path, *_relabel(tree, path)]


def _relabel(tree: SessionTree, path: list[SessionEntry]) -> list[LabelEntry]:
    """Label entries that give ``path``'s entries, in a copy of ``path``, their labels here.

    The copy carries the label entries on the path itself (its parent chain runs through
    them); labels set or cleared elsewhere in the tree are re-created after the last entry.
    """
    copied: dict[str, str] = {}
    for entry in path:
        if isinstance(entry, LabelEntry):
            if entry.label:
                copied[entry.target_id] = entry.label
            else:
                copied.pop(entry.target_id, None)
    parent = path[-1].id if path else None
    fresh: list[LabelEntry] = []
    for entry in path:
        label = tree.labels.get(entry.id)
        if label != copied.get(entry.id):
            relabel = LabelEntry(
                id=tree.new_id(),
                parent_id=parent,
                timestamp=iso_now(),
                target_id=entry.id,
                label=label,
            )
            fresh.append(relabel)
            parent = relabel.id
    return fresh
