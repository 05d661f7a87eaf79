"""Session files on disk: pi's exact bytes, durability repairs, strict/lenient reading, migrations,
and pi's file layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage, TextContent, UserMessage
from pi_notebook.harness import (
    InMemorySessionStorage,
    JsonlSessionStorage,
    LabelEntry,
    MessageEntry,
    Session,
    SessionFileError,
    SessionFileWarning,
    SessionHeader,
    SessionWriteError,
    UnknownEntry,
    default_session_dir,
    session_file_name,
)
from pi_notebook.harness.jsonl import encode_record
from pi_notebook.harness.layout import encode_cwd


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1_700_000_000_000)


def write(path: Path, *records: str) -> Path:
    path.write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return path


HEADER = (
    '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
)


def entry(entry_id: str, parent: str | None, text: str = "hi") -> str:
    parent_json = "null" if parent is None else f'"{parent}"'
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent_json},'
        f'"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user",'
        f'"content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}}}'
    )


# --- the bytes written ---------------------------------------------------------------------------


def test_a_lone_surrogate_is_escaped_not_an_encoding_error(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    session.append_custom("x", {"text": "a\ud800b"})
    assert b'"text":"a\\ud800b"' in (tmp_path / "s.jsonl").read_bytes()


def test_created_file_is_header_then_one_line_per_entry(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "s.jsonl"
    session = Session.create(path, cwd="/home/u/p")
    first = session.append_message(user("hello"))
    session.append_model_change("anthropic", "claude-sonnet-4-5")
    raw = path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 3
    header, message, change = lines_of(path)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header == {
        "type": "session",
        "version": 3,
        "id": session.id,
        "timestamp": session.header.timestamp,
        "cwd": "/home/u/p",
    }
    assert list(message) == ["type", "id", "parentId", "timestamp", "message"]
    assert message["parentId"] is None and message["id"] == first.id
    assert message["message"] == first.message.to_json_dict()
    assert list(change) == ["type", "id", "parentId", "timestamp", "provider", "modelId"]
    assert change["parentId"] == first.id


def test_forked_header_names_its_parent_last() -> None:
    header = SessionHeader(id="n", timestamp="t", cwd="/p", parent_session="/old.jsonl")
    assert encode_record(header) == (
        b'{"type":"session","version":3,"id":"n","timestamp":"t","cwd":"/p",'
        b'"parentSession":"/old.jsonl"}\n'
    )


def test_every_append_is_on_disk_when_it_returns(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(JsonlSessionStorage(path, fsync=True), cwd="/p")
    for i in range(5):
        appended = session.append_message(user(f"m{i}"))
        assert lines_of(path)[-1]["id"] == appended.id
    assert len(lines_of(path)) == 6


def test_create_refuses_to_overwrite_a_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    Session.create(path, cwd="/p")
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        Session.create(path, cwd="/p")
    assert path.read_bytes() == before


def test_create_accepts_an_existing_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.touch()
    session = Session.create(path, cwd="/p")
    assert lines_of(path)[0]["id"] == session.id


def test_append_to_a_deleted_file_fails_loudly_but_keeps_the_message(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    path.unlink()
    with pytest.raises(SessionWriteError, match="Not saved yet: 1 entry \\(user message") as info:
        session.append_message(user("lost?"))
    assert isinstance(info.value.cause, FileNotFoundError)
    assert len(session) == 1 and session.unsaved_entries == info.value.unsaved
    assert session.write_error is info.value
    with pytest.raises(SessionWriteError):  # settings are refused while the file is gone
        session.append_label(session.leaf_id or "", "x")  # type: ignore[arg-type]
    assert len(session) == 1


# --- reading: strict, lenient, repairs -----------------------------------------------------------


def test_malformed_middle_line_names_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl", HEADER, entry("a", None), '{"type":"message",', entry("b", "a")
    )
    with pytest.raises(SessionFileError) as info:
        Session.open(path)
    assert info.value.line == 3 and info.value.source == str(path)
    assert str(info.value).startswith(f"{path}:3: not valid JSON")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('{"type":"nonsense","parentId":null,"timestamp":"t"}', "invalid entry: id"),
        (entry("a", None), "duplicate entry id 'a'"),
        (
            '{"type":"leaf","id":"l","parentId":"a","timestamp":"t","targetId":"zz"}',
            "unknown entry",
        ),
        ("[1, 2]", "invalid entry"),
    ],
)
def test_invalid_entries_are_refused_in_strict_mode(tmp_path: Path, bad: str, reason: str) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), bad, entry("b", "a"))
    with pytest.raises(SessionFileError, match=f"s.jsonl:3: .*{reason}"):
        Session.open(path)


def test_an_entry_whose_content_is_invalid_is_refused_when_read(tmp_path: Path) -> None:
    """Opening checks a line's JSON and structure; its content is checked when it is read, and
    the error names the file and line then."""
    bad = '{"type":"message","id":"x","parentId":"a","timestamp":"t"}'
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), bad, entry("b", "x"))
    session = Session.open(path)
    assert session.index.ids == ["a", "x", "b"] and session.leaf_id == "b"
    assert session.get_entry("a") is not None
    with pytest.raises(SessionFileError, match=r"s.jsonl:3: invalid entry: message") as info:
        session.build_context()
    assert info.value.line == 3
    with pytest.raises(SessionFileError, match=r"s.jsonl:3: "):
        session.get_entries()


def test_lenient_mode_keeps_an_entry_of_invalid_content_as_unknown(tmp_path: Path) -> None:
    bad = '{"type":"message","id":"x","parentId":"a","timestamp":"t","message":{"role":"user"}}'
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), bad, entry("b", "x"))
    session = Session.open(path, strict=False)
    with pytest.warns(SessionFileWarning, match=r"s.jsonl:3: invalid entry: message.*unknown"):
        context = session.build_context()
    assert len(context.messages) == 2  # a and b; x adds nothing
    kept = session.get_entry("x")
    assert isinstance(kept, UnknownEntry) and kept.type == "message"
    assert encode_record(kept).decode().rstrip("\n") == bad  # written back as it was


def test_lenient_mode_skips_bad_lines_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None), "garbage", entry("b", "a"))
    with pytest.warns(SessionFileWarning, match=r"s.jsonl:3: skipped: not valid JSON"):
        session = Session.open(path, strict=False)
    assert [e.id for e in session.get_entries()] == ["a", "b"]
    assert session.leaf_id == "b"
    assert "garbage" in path.read_text()  # skipped, not deleted


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        ("\n\n", "empty file"),
        (entry("a", None) + "\n", "no session header"),
        ("{not json\n", "no session header: not valid JSON"),
        (HEADER.replace('"version":3', '"version":4') + "\n", "unsupported session version 4"),
        ('{"type":"session","version":3}\n', "invalid session header"),
    ],
)
def test_a_file_without_a_usable_header_is_refused(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(content)
    with pytest.raises(SessionFileError, match=message):
        Session.open(path)


def test_torn_last_line_is_dropped_and_removed_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None))
    whole = path.read_bytes()
    with path.open("ab") as file:
        file.write(entry("b", "a").encode()[:50])
    with pytest.warns(SessionFileWarning, match=r"last line \(50 bytes\) was torn"):
        session = Session.open(path)
    assert [e.id for e in session.get_entries()] == ["a"]
    assert path.read_bytes() == whole
    session.append_message(user("after the crash"))
    reopened = Session.open(path)  # no warning now
    assert len(reopened) == 2 and reopened.get_entries()[1].parent_id == "a"


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER + "\n" + entry("a", None))
    session = Session.open(path)
    assert session.leaf_id == "a"
    assert path.read_text().endswith("\n")
    session.append_message(user("next"))
    assert len(Session.open(path)) == 2


def test_append_repairs_a_line_torn_by_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    first = session.append_message(user("one"))
    with path.open("ab") as file:  # another process died in the middle of its write
        file.write(b'{"type":"message","id":"other","parentId":null,"timest')
    with pytest.warns(SessionFileWarning, match="torn"):
        second = session.append_message(user("two"))
    assert [e["id"] for e in lines_of(path)[1:]] == [first.id, second.id]


def test_read_only_file_with_torn_tail_is_read_without_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, entry("a", None))
    with path.open("ab") as file:
        file.write(b'{"type":"mess')
    before = path.read_bytes()
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # as if not writable
    with pytest.warns(SessionFileWarning, match="read-only"):
        session = Session.open(path)
    assert session.leaf_id == "a" and path.read_bytes() == before


# --- migrations ----------------------------------------------------------------------------------


def test_version_1_file_is_migrated_and_rewritten(tmp_path: Path) -> None:
    path = write(
        tmp_path / "v1.jsonl",
        '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}',
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"first","timestamp":1}}',
        '{"type":"message","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"user","content":"second","timestamp":2}}',
        '{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"S",'
        '"firstKeptEntryIndex":2,"tokensBefore":10}',
    )
    session = Session.open(path)
    first, second, compaction = session.get_entries()
    assert first.parent_id is None and second.parent_id == first.id
    assert compaction.parent_id == second.id
    assert compaction.model_dump()["first_kept_entry_id"] == second.id
    header, *rest = lines_of(path)
    assert header["version"] == 3 and header["id"] == "old"
    assert [e["id"] for e in rest] == [first.id, second.id, compaction.id]
    assert "firstKeptEntryIndex" not in rest[2]
    assert [e.id for e in Session.open(path).get_entries()] == [e["id"] for e in rest]
    context = session.build_context()
    assert [m.role for m in context.messages] == ["compactionSummary", "user"]


def test_version_2_hook_messages_become_custom_messages(tmp_path: Path) -> None:
    path = write(
        tmp_path / "v2.jsonl",
        HEADER.replace('"version":3', '"version":2'),
        '{"type":"message","id":"h","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"hookMessage","customType":"note","content":"hi","display":true,'
        '"timestamp":5}}',
    )
    session = Session.open(path)
    message = session.build_context().messages[0]
    assert message.role == "custom" and message.model_dump()["custom_type"] == "note"
    assert lines_of(path)[1]["message"]["role"] == "custom"
    assert lines_of(path)[0]["version"] == 3


def test_migration_errors_still_name_the_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "v1.jsonl",
        '{"type":"session","id":"old","timestamp":"t","cwd":"/p"}',
        '{"type":"message","timestamp":"t","message":{"role":"user","content":"a","timestamp":1}}',
        '{"type":"message","timestamp":"t"}',
    )
    with pytest.raises(SessionFileError, match=r"v1.jsonl:3: invalid entry: message"):
        Session.open(path)


# --- in memory -----------------------------------------------------------------------------------


def test_in_memory_storage_holds_one_session() -> None:
    storage = InMemorySessionStorage()
    with pytest.raises(LookupError):
        storage.load()
    session = Session.create(storage, cwd="/p")
    session.append_message(user("x"))
    with pytest.raises(FileExistsError):
        Session.create(storage)
    reopened = Session.open(storage)
    assert reopened.id == session.id and reopened.get_entries() == session.get_entries()
    assert session.path is None


# --- pi's layout ---------------------------------------------------------------------------------


def test_pi_directory_and_file_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert encode_cwd("/home/user/project") == "--home-user-project--"
    assert encode_cwd("C:\\Users\\me") == "--C--Users-me--"
    assert session_file_name("01a229f5-a5b7", "2026-11-30T00:58:14.328Z") == (
        "2026-11-30T00-58-14-328Z_01a229f5-a5b7.jsonl"
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert default_session_dir("/w") == tmp_path / "agent" / "sessions" / "--w--"
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert default_session_dir("/w") == Path.home() / ".pi" / "agent" / "sessions" / "--w--"
    assert default_session_dir("/w", root=tmp_path) == tmp_path / "--w--"


def test_create_in_names_the_file_like_pi(tmp_path: Path) -> None:
    session = Session.create_in(tmp_path, cwd="/w")
    assert session.path == tmp_path / session_file_name(session.id, session.header.timestamp)
    assert Session.open(session.path).id == session.id


def test_entries_are_immutable_records() -> None:
    label = LabelEntry(id="l", parent_id=None, timestamp="t", target_id="x")
    with pytest.raises(ValueError, match="frozen"):
        label.label = "changed"  # type: ignore[misc]
    assert label.to_json_dict() == {
        "type": "label",
        "id": "l",
        "parentId": None,
        "timestamp": "t",
        "targetId": "x",
    }
    message = MessageEntry(
        id="m",
        parent_id="l",
        timestamp="t",
        message=AssistantMessage(api="a", provider="p", model="m", timestamp=3),
    )
    assert list(message.to_json_dict()["message"]) == [
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "timestamp",
    ]
