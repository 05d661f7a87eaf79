"""The session's structure index (``harness.session_index``) says what walking the entry objects
says: the plain walks below are the reference, on sessions loaded from a file and grown live,
with leaf moves, labels, context edits, unknown entry types and parents that are missing or
later in the file."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pi_notebook.ai import UserMessage, faux_assistant_message
from pi_notebook.harness import InMemorySessionStorage, LeafEntry, Session, UnknownEntry
from pi_notebook.harness.entries import SessionEntry, is_system_entry
from pi_notebook.harness.jsonl import SessionFileWarning, encode_record
from pi_notebook.harness.session_index import MARKED_TYPES, NO_POSITION, SessionIndex


def reference_tree_parent_id(entries: list[SessionEntry], entry: SessionEntry) -> str | None:
    """Session's walk before the index: through leaf moves, by entry objects."""
    by_id = {e.id: e for e in entries}
    if type(entry) is LeafEntry:
        return None
    parent_id = entry.parent_id
    while parent_id is not None and type(parent := by_id.get(parent_id)) is LeafEntry:
        parent_id = parent.parent_id
    return parent_id


def reference_tree_parents(entries: list[SessionEntry]) -> list[int]:
    positions = {e.id: i for i, e in enumerate(entries)}
    out = []
    for i, entry in enumerate(entries):
        parent_id = reference_tree_parent_id(entries, entry)
        parent = NO_POSITION if parent_id is None else positions.get(parent_id, NO_POSITION)
        out.append(parent if parent < i else NO_POSITION)
    return out


def check(index: SessionIndex, entries: list[SessionEntry]) -> None:
    assert index.ids == [e.id for e in entries]
    assert index.parent_ids == [e.parent_id for e in entries]
    assert index.types == [e.type for e in entries]
    assert index.timestamps == [e.timestamp for e in entries]
    assert index.positions == {e.id: i for i, e in enumerate(entries)}
    assert index.marks == [i for i, e in enumerate(entries) if e.type in MARKED_TYPES]
    assert index.systems == [i for i, e in enumerate(entries) if is_system_entry(e)]
    assert index.moves == sum(type(e) is LeafEntry for e in entries)
    assert index.tree_parents() == reference_tree_parents(entries)
    for position, entry in enumerate(entries):
        assert index.tree_parent_id(position) == reference_tree_parent_id(entries, entry)


def grow(session: Session, steps: int, seed: int) -> None:
    """Random appends: turns, branches (leaf moves), labels, names, context edits, custom."""
    rng = random.Random(seed)
    for step in range(steps):
        entries = session.get_entries()
        roll = rng.random()
        if roll < 0.08 and entries:
            target = rng.choice([e for e in entries if type(e) is not LeafEntry])
            session.set_leaf(target.id)
        elif roll < 0.12 and entries:
            target = rng.choice(entries)
            session.append_label(target.id, rng.choice(["v1", "", "keep"]))
        elif roll < 0.14:
            session.append_session_info(f"name {step}")
        elif roll < 0.16:
            session.append_custom("state", {"step": step})
        elif roll < 0.17:
            session.append_system_message(f"Note {step}.")
        elif roll < 0.18 and session.leaf_id is not None:
            branch = [e for e in session.get_branch() if e.type == "message"]
            if branch and branch[-1].message.role in ("user", "assistant"):
                session.append_context_edit(branch[-1].id, None)
        elif roll < 0.6:
            session.append_message(UserMessage(content=f"user {step}", timestamp=step))
        else:
            session.append_message(faux_assistant_message(f"reply {step}"))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_opened_and_a_live_session_index_as_their_entries_say(tmp_path: Path, seed: int) -> None:
    live = Session.create(tmp_path / "s.jsonl", cwd="/p")
    grow(live, 300, seed)
    check(live.index, live.get_entries())  # grown one entry at a time
    opened = Session.open(tmp_path / "s.jsonl")
    check(opened.index, opened.get_entries())  # collected by the decoder
    assert opened.index.ids == live.index.ids
    fresh = SessionIndex(live.get_entries())  # built in one go from entry objects
    check(fresh, live.get_entries())


def test_tree_parents_made_in_bulk_and_entry_by_entry_agree(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    grow(session, 200, 7)
    index = session.index
    assert len(index.tree_parents()) == len(index)  # a bulk resolution (200 new)
    grow(session, 30, 8)  # fewer than 64 new: one at a time
    assert index.tree_parents() == reference_tree_parents(session.get_entries())
    grow(session, 150, 9)  # many new again
    assert index.tree_parents() == reference_tree_parents(session.get_entries())


def test_odd_parents_and_unknown_types() -> None:
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    a = session.append_message(UserMessage(content="a", timestamp=0))
    b = session.append_message(UserMessage(content="b", timestamp=0))
    odd: list[SessionEntry] = [
        a,
        b.model_copy(update={"id": "orphan", "parent_id": "missing"}),
        b.model_copy(update={"id": "early", "parent_id": "late"}),  # a parent further down
        UnknownEntry(type="future_kind", id="late", parent_id=a.id, timestamp=None),
        UnknownEntry(type="another", id="bare"),
    ]
    index = SessionIndex(odd)
    check(index, odd)
    assert index.tree_parents() == [NO_POSITION, NO_POSITION, NO_POSITION, 0, NO_POSITION]
    assert index.path(2) == [0, 3, 2]  # the path follows ids, wherever they are


def test_a_cycle_of_parent_ids_is_reported_not_walked_forever() -> None:
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    a = session.append_message(UserMessage(content="a", timestamp=0))
    looped = [
        a.model_copy(update={"parent_id": "z"}),
        a.model_copy(update={"id": "z", "parent_id": a.id}),
    ]
    index = SessionIndex(looped)
    assert index.path(0) is None


def test_a_repaired_file_is_indexed_as_it_was_repaired(tmp_path: Path) -> None:
    """Lenient opening skips a malformed line and breaks a cycle of parent ids: the index the
    decoder collected says what the repaired entries say."""
    source = Session.create(InMemorySessionStorage(), cwd="/p")
    a = source.append_message(UserMessage(content="a", timestamp=0))
    b = source.append_message(UserMessage(content="b", timestamp=0))
    source.set_leaf(a.id)
    c = source.append_message(UserMessage(content="c", timestamp=0))
    looped = [
        b.model_copy(update={"id": "x", "parent_id": "y"}),
        c.model_copy(update={"id": "y", "parent_id": "x"}),
    ]
    lines = [encode_record(source.header)] + [encode_record(e) for e in source.get_entries()]
    lines += [b"{not json\n", *(encode_record(e) for e in looped)]
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"".join(lines))
    with pytest.warns(SessionFileWarning):
        opened = Session.open(path, strict=False)
    check(opened.index, opened.get_entries())
    assert opened.get_entry("x").parent_id is None  # the cycle's first entry became a root
