"""An opened session keeps its common entries as lines until they are read, and reading them
gives exactly the entries an eager read of the file gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage, TextContent, UserMessage
from pi_notebook.harness import (
    CustomEntry,
    LabelEntry,
    MessageEntry,
    Session,
    SessionFileError,
    SessionFileWarning,
    SessionInfoEntry,
)
from pi_notebook.harness.entries import UnknownEntry
from pi_notebook.harness.entry_list import EntryList, validate_entry_json
from pi_notebook.harness.session_context import build_context


def _session(path: Path) -> Session:
    """Messages on two branches, a label, a name, a custom entry, a usage entry, an edit."""
    session = Session.create(path, cwd="/p")
    first = session.append_message(
        UserMessage(content=[TextContent(text="one")], timestamp=1_700_000_000_000)
    )
    reply = session.append_message(
        AssistantMessage(
            content=[TextContent(text="two")],
            api="faux",
            provider="faux",
            model="m",
            timestamp=1_700_000_000_001,
        )
    )
    session.append_custom("pi_notebook.test", {"n": 1})
    session.append_label(first.id, "start")
    session.append_session_info("named")
    session.append_usage("cache_warm", "faux", "m", {"input": 3, "cost": {"total": 0.5}})
    session.append_context_edit(reply.id, "edited")
    session.set_leaf(first.id)
    session.append_message(
        UserMessage(content=[TextContent(text="other")], timestamp=1_700_000_000_002)
    )
    return session


def _entries(session: Session) -> EntryList:
    entries = session.index.entries
    assert isinstance(entries, EntryList)
    return entries


def test_an_open_reads_only_what_the_tree_needs(tmp_path: Path) -> None:
    written = _session(tmp_path / "s.jsonl")
    session = Session.open(tmp_path / "s.jsonl")
    entries = _entries(session)
    types = session.index.types
    later = {"message", "custom", "usage"}
    assert entries.cold() == sum(kind in later for kind in types)
    # the tree's facts came from the structure and the few entries read at open
    assert session.leaf_id == written.leaf_id and session.name == "named"
    assert session.labels == written.labels
    assert [e.id for e in session.entries_of("label", "session_info")] == [
        e.id for e in written.get_entries() if isinstance(e, LabelEntry | SessionInfoEntry)
    ]
    assert entries.cold() == sum(kind in later for kind in types)  # read at open already


def test_reading_gives_the_entries_an_eager_read_gives(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    written = _session(path)
    session = Session.open(path)
    custom = session.entries_of("custom")
    assert [type(e) for e in custom] == [CustomEntry]
    assert _entries(session).cold() == sum(t in ("message", "usage") for t in session.index.types)
    context = session.build_context()
    assert context == written.build_context()
    assert _entries(session).cold() == 2  # off the branch, not read: the reply and the usage
    eager = [validate_entry_json(line) for line in path.read_bytes().split(b"\n")[1:-1]]
    assert session.get_entries() == eager == written.get_entries()
    assert _entries(session).cold() == 0
    one = session.get_entry(eager[0].id)
    assert one is session.get_entry(eager[0].id)  # built once, then kept
    # a reader that saw the line before another thread built it gets the built entry
    assert _entries(session)._read(0) is one
    assert isinstance(one, MessageEntry)
    assert session.usage_totals() == written.usage_totals()


def test_a_line_found_invalid_by_the_context_names_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "late.jsonl"
    _session(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"role":"assistant"' in lines[2]
    lines[2] = lines[2].replace(b'"api":"faux",', b"")  # sound structure, invalid message
    path.write_bytes(b"".join(lines))
    session = Session.open(path)  # the structure is sound: the open succeeds
    where = re.escape(str(path))
    reason = r"invalid entry: message\.message\.assistant\.api: Field required"
    with pytest.raises(SessionFileError, match=rf"{where}:3: {reason}"):
        build_context(session.index, session.index.ids[1])  # a path through the damaged line
    with pytest.raises(SessionFileError, match=rf"{where}:3: {reason}"):
        session.get_branch(session.index.ids[1])

    lenient = Session.open(path, strict=False)
    with pytest.warns(SessionFileWarning, match=rf"{where}:3: .*unknown content"):
        branch = lenient.get_branch(lenient.index.ids[1])
    assert isinstance(branch[1], UnknownEntry)
    lenient.set_leaf(lenient.index.ids[1])
    assert [m.role for m in lenient.build_context().messages] == ["user"]


def test_a_context_holds_messages_and_their_entries_are_made_when_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    written = _session(path)
    session = Session.open(path)
    context = session.build_context()
    entries, index = _entries(session), session.index
    assert session.leaf_id is not None
    on_path = index.path(index.positions[session.leaf_id]) or []
    held = [entries._items[p] for p in on_path if index.types[p] == "message"]
    assert [type(item) for item in held] == [UserMessage, UserMessage]  # not their entries
    assert all(item is message for item, message in zip(held, context.messages, strict=True))
    branch = session.get_branch()
    assert branch == written.get_branch()
    made = [e for e in branch if isinstance(e, MessageEntry)]
    # the same message objects, inside entries that serialise exactly as the file's lines
    assert [e.message for e in made] == context.messages
    assert all(e.message is m for e, m in zip(made, context.messages, strict=True))
    lines = {validate_entry_json(line).id: line for line in path.read_bytes().splitlines()[1:]}
    for entry in made:
        assert entry.model_fields_set == {"type", "id", "parent_id", "timestamp", "message"}
        dumped = entry.model_dump_json(by_alias=True, exclude_none=True).encode()
        assert dumped == lines[entry.id]
        assert session.get_entry(entry.id) is entry  # made once, then kept


def test_a_message_line_with_keys_of_its_own_is_read_as_a_whole_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[1].startswith(b'{"type":"message"')
    lines[1] = lines[1].replace(b'"type":"message",', b'"type":"message","tag":"kept",', 1)
    path.write_bytes(b"".join(lines))
    session = Session.open(path)
    session.build_context()
    first = session.get_entries()[0]
    assert isinstance(first, MessageEntry) and first.model_extra == {"tag": "kept"}
    assert session.index.entries._items[0] is first  # built whole, not held as a message
