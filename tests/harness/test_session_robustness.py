"""Session robustness: parent-id cycles, writes that fail mid-run, and a fuzz of the
reader that it raises nothing but ``SessionFileError``."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.ai import AssistantMessage, TextContent, UserMessage
from pi_notebook.harness import (
    InMemorySessionStorage,
    MessageEntry,
    Session,
    SessionFileError,
    SessionFileWarning,
    SessionWriteError,
)
from pi_notebook.harness.jsonl import decode_session

HEADER = (
    '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
)


def entry(entry_id: str, parent: str | None) -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user",'
        f'"content":[{{"type":"text","text":"{entry_id}"}}],"timestamp":1}}}}'
    )


def write(path: Path, *records: str) -> Path:
    path.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return path


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1)


def reply(text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], api="faux", provider="faux", model="m", timestamp=2
    )


# --- parent-id cycles ----------------------------------------------------------------------------


def test_a_parent_cycle_is_refused_at_open_naming_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", "c"), entry("b", "a"), entry("c", "b"))
    with pytest.raises(SessionFileError, match=r"s.jsonl:2: parent ids form a cycle") as info:
        Session.open(path)
    assert info.value.line == 2 and "lines 2, 3, 4" in info.value.reason


def test_a_self_parent_is_a_cycle_too(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), entry("b", "b"))
    with pytest.raises(SessionFileError, match=r"s.jsonl:3: .*cycle through entry 'b'"):
        Session.open(path)


def test_lenient_open_repairs_a_cycle_with_a_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl", HEADER, entry("r", None), entry("a", "c"), entry("b", "a"),
        entry("c", "b"),
    )  # fmt: skip
    with pytest.warns(SessionFileWarning, match=r"s.jsonl:3: repaired: .*now a root"):
        session = Session.open(path, strict=False)
    assert session.leaf_id == "c"
    assert [e.id for e in session.get_branch()] == ["a", "b", "c"]
    assert sorted(node.entry.id for node in session.get_tree()) == ["a", "r"]
    assert '"id":"a","parentId":"c"' in path.read_text()  # the file is left as it was


# --- writes that fail ----------------------------------------------------------------------------


def _disk_full(path: Path) -> Path:
    """Swap the session file for a link to /dev/full (every write: ENOSPC); returns the copy."""
    saved = path.with_name("saved.jsonl")
    shutil.copy(path, saved)
    path.unlink()
    path.symlink_to("/dev/full")
    return saved


def _disk_back(path: Path, saved: Path) -> None:
    path.unlink()
    shutil.copy(saved, path)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_reply_written_to_a_full_disk_is_kept_and_written_later(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    question = session.append_message(user("question"))
    saved = _disk_full(path)
    with pytest.raises(SessionWriteError, match="No space left") as info:
        session.append_message(reply("the answer"))
    error = info.value
    assert "Not saved yet: 1 entry (assistant message" in str(error)
    assert [type(e) for e in error.unsaved] == [MessageEntry]
    # nothing is lost: the reply is in the tree and the context, and reported
    assert session.leaf_id == error.unsaved[0].id and session.get_branch()[0] == question
    assert [m.role for m in session.build_context().messages] == ["user", "assistant"]
    assert session.unsaved_entries == error.unsaved and session.write_error is error
    with pytest.raises(SessionWriteError):  # settings are refused (and not kept) meanwhile
        session.append_thinking_level_change("high")
    assert len(session) == 2
    with pytest.raises(SessionWriteError, match="Not saved yet: 1 entry"):
        session.flush()

    _disk_back(path, saved)
    follow_up = session.append_message(user("thanks"))  # writes the kept reply first
    assert session.unsaved_entries == [] and session.write_error is None
    reopened = Session.open(path)
    assert [e.id for e in reopened.get_entries()] == [e.id for e in session.get_entries()]
    assert reopened.leaf_id == follow_up.id


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_flush_writes_what_was_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    saved = _disk_full(path)
    for text in ("one", "two"):
        with pytest.raises(SessionWriteError):
            session.append_message(user(text))
    assert len(session.unsaved_entries) == 2
    _disk_back(path, saved)
    assert session.flush() == 2 and session.flush() == 0
    texts = [e.message.content for e in Session.open(path).get_entries()]  # type: ignore[union-attr]
    assert texts == [user("one").content, user("two").content]


# --- fuzz: the reader raises only SessionFileError -----------------------------------------------

_IDS = st.sampled_from(["a", "b", "c", "d"])
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_TYPES = st.sampled_from(
    ["message", "leaf", "label", "compaction", "context_edit", "usage", "branch_summary",
     "custom", "custom_message", "session_info", "model_change", "thinking_level_change",
     "active_tools_change", "future", "session"]
)  # fmt: skip


@st.composite
def _entry_line(draw: st.DrawFn) -> bytes:
    record: dict[str, object] = {"type": draw(_TYPES), "id": draw(_IDS)}
    record["parentId"] = draw(st.none() | _IDS)
    record["timestamp"] = draw(st.sampled_from(["2026-01-01T00:00:00.000Z", "nope", 5]))
    for key in draw(st.lists(st.sampled_from(
        ["message", "targetId", "label", "summary", "firstKeptEntryId", "tokensBefore",
         "replacement", "usage", "kind", "provider", "model", "fromId", "customType", "content",
         "display", "systemMessage", "thinkingLevel", "modelId", "activeToolNames"]
    ), max_size=5)):  # fmt: skip
        record[key] = draw(_VALUES | _IDS)
    if draw(st.booleans()):
        record["message"] = {
            "role": draw(st.sampled_from(["user", "assistant", "system", "toolResult", "x"])),
            "content": draw(_VALUES),
            "timestamp": 1,
        }
    line = json.dumps(record).encode()
    mangle = draw(st.sampled_from(["none", "none", "cut", "garbage"]))
    if mangle == "cut":
        line = line[: draw(st.integers(0, len(line)))]
    elif mangle == "garbage":
        line = draw(st.binary(max_size=20))
    return line


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(
        [HEADER.encode(), b'{"type":"session","version":1,"id":"s"}', b"[]", b""]
    ),
    lines=st.lists(_entry_line(), max_size=8),
    strict=st.booleans(),
)
def test_the_reader_raises_only_session_file_errors(
    header: bytes, lines: list[bytes], strict: bool
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SessionFileWarning)
        try:  # (an entry's content is checked when it is first read: by the Session here)
            decoded = decode_session([header, *lines], source="fuzz.jsonl", strict=strict)
            session = Session(InMemorySessionStorage(), decoded.header, decoded.entries)
        except SessionFileError:
            return
    session.build_context()
    session.get_tree()
    session.usage_totals()
    for node in session.get_entries():
        session.get_branch(node.id)


# --- a torn line pi 1.6 has already terminated ----------------------------------------------------


def test_a_torn_line_pi_terminated_is_dropped_too(tmp_path: Path) -> None:
    """pi 1.6 appends a newline after a torn last line (and skips it when reading)."""
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None))
    whole = path.read_bytes()
    with path.open("ab") as file:
        file.write(entry("b", "a").encode()[:60] + b"\n")
    with pytest.warns(SessionFileWarning, match=r"last line \(60 bytes\) was torn"):
        session = Session.open(path)
    assert [e.id for e in session.get_entries()] == ["a"] and path.read_bytes() == whole
    session.append_message(user("after"))
    assert len(Session.open(path)) == 2


def test_a_terminated_torn_line_in_a_read_only_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), '{"type":"mess')
    before = path.read_bytes()
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # as if not writable
    with pytest.warns(SessionFileWarning, match="read-only"):
        session = Session.open(path)
    assert session.leaf_id == "a" and path.read_bytes() == before
