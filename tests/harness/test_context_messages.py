"""A built context reads its messages from the session's lines when they are first read: the
settings and the replayed system prompt come without them, the messages are the ones an eager
read gives, and a damaged line is reported when it is read, naming its file and line."""

from __future__ import annotations

import copy
import json
import pickle
import re
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import AssistantMessage, TextContent, Tool, ToolCall, UserMessage
from pi_notebook.harness import Session, SessionFileError, SessionFileWarning
from pi_notebook.harness.context_messages import ContextMessages
from pi_notebook.harness.entry_list import EntryList, validate_entry_json
from pi_notebook.harness.session_context import SessionContext, build_context

TOOL = Tool(name="look", description="Look.", parameters={"type": "object"})


def _reply(text: str, **extra: Any) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], api="faux", provider="faux", model="m", **extra
    )


def _session(path: Path) -> Session:
    """System messages among messages that only look like them: a user text quoting a system
    role, a tool call whose arguments hold one."""
    session = Session.create(path, cwd="/p")
    session.append_system_message("Be brief.", tools_added=[TOOL])
    session.append_message(UserMessage(content="hello"))
    session.append_message(_reply("hi"))
    session.append_message(UserMessage(content='Say {"role":"system"} back.'))
    session.append_message(
        AssistantMessage(
            content=[ToolCall(id="c1", name="look", arguments={"role": "system"})],
            api="faux",
            provider="faux",
            model="m",
        )
    )
    session.append_system_message(sections={"style": "Use lists."})
    session.append_message(_reply("done"))
    session.append_message(UserMessage(content="thanks"))
    return session


def _entries(session: Session) -> EntryList:
    entries = session.index.entries
    assert isinstance(entries, EntryList)
    return entries


def _eager(path: Path, session: Session) -> SessionContext:
    """The context built from every line validated up front (no line left to read)."""
    entries = [validate_entry_json(line) for line in path.read_bytes().splitlines()[1:]]
    return build_context(entries, session.leaf_id)


def test_the_settings_come_without_reading_the_messages(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    written = _session(path)
    session = Session.open(path)
    cold = _entries(session).cold()
    context = session.build_context()
    assert isinstance(context.messages, ContextMessages) and not context.messages.loaded
    # read: the system messages (the open found them) and the lines back to the last
    # assistant message (the model); not the greeting, its reply, the quoted role or the
    # tool call whose arguments hold one
    assert cold == 8 and _entries(session).cold() == 4
    assert session.index.systems == [0, 5]
    expected = written.build_context()
    assert context.system_prompt == expected.system_prompt
    assert context.system_prompt is not None and "Use lists." in context.system_prompt
    assert context.tool_names == ["look"] and context.model == expected.model
    assert context.messages == expected.messages == _eager(path, session).messages
    assert context.messages.loaded and _entries(session).cold() == 0
    assert [m.role for m in context.messages] == [
        "system", "user", "assistant", "user", "assistant", "system", "assistant", "user",
    ]  # fmt: skip


def test_a_system_message_spelled_with_escapes_is_found(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[1].count(b'"role":"system"') == 1
    lines[1] = lines[1].replace(b'"role":"system"', b'"role":"\\u0073ystem"')
    lines[1] = lines[1].replace(b"Be brief.", b"Be \\u0062rief.")
    path.write_bytes(b"".join(lines))
    session = Session.open(path)
    context = session.build_context()
    assert not context.messages.loaded  # type: ignore[attr-defined]
    assert context.system_prompt == _eager(path, session).system_prompt
    assert context.system_prompt is not None and "Be brief." in context.system_prompt


def test_a_hidden_system_message_is_left_out_of_the_replay(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = _session(path)
    patch = session.get_entries()[5]
    assert patch.message.role == "system"  # type: ignore[union-attr]
    # (the API refuses to edit a system message; a file written by hand may still do it)
    line = {
        "type": "context_edit",
        "id": "e1",
        "parentId": session.leaf_id,
        "timestamp": "2026-12-06T00:00:00.000Z",
        "targetId": patch.id,
        "replacement": None,
    }
    with path.open("a") as out:
        out.write(json.dumps(line, separators=(",", ":")) + "\n")
    opened = Session.open(path)
    context = opened.build_context()
    eager = _eager(path, opened)
    assert context.system_prompt == eager.system_prompt
    assert context.system_prompt is not None and "Use lists." not in context.system_prompt
    assert context.messages == eager.messages
    assert [m.role for m in context.messages].count("system") == 1


def test_a_compaction_context_reads_lazily_too(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = _session(path)
    kept = session.get_entries()[6]
    session.append_compaction("Earlier: a look.", kept.id, tokens_before=50)
    session.append_message(UserMessage(content="more"))
    opened = Session.open(path)
    context = opened.build_context()
    eager = _eager(path, opened)
    assert not context.messages.loaded  # type: ignore[attr-defined]
    assert context.system_prompt == eager.system_prompt == session.build_context().system_prompt
    assert context.messages == eager.messages
    assert [m.role for m in context.messages] == [
        "system", "compactionSummary", "assistant", "user", "user",
    ]  # fmt: skip


def test_a_damaged_message_is_reported_when_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert b"hello" in lines[2]
    lines[2] = lines[2].replace(b'"content":"hello"', b'"content":7')  # sound structure
    path.write_bytes(b"".join(lines))
    session = Session.open(path)
    context = session.build_context()  # the settings do not need that line
    assert context.system_prompt is not None
    where = re.escape(str(path))
    with pytest.raises(SessionFileError, match=rf"{where}:3: invalid entry: message\.message"):
        list(context.messages)

    lenient = Session.open(path, strict=False)
    messages = lenient.build_context().messages
    with pytest.warns(SessionFileWarning, match=rf"{where}:3: .*unknown content"):
        roles = [m.role for m in messages]
    assert roles == ["system", "assistant", "user", "assistant", "system", "assistant", "user"]


def test_the_sequence_behaves_as_the_list_it_reads(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    written = _session(path).build_context().messages
    context = Session.open(path).build_context()
    messages = context.messages
    assert repr(messages) == "ContextMessages(<not read yet>)"
    assert len(messages) == 8 and messages[-1] == written[-1] and messages[1:3] == written[1:3]
    assert messages == list(written) and messages == tuple(written) and messages != written[:2]
    extra = [UserMessage(content="x")]
    assert messages + extra == [*written, *extra]
    assert extra + messages == [*extra, *written]
    assert list(reversed(messages)) == list(reversed(written)) and written[0] in messages
    assert copy.copy(messages) == list(written) and type(copy.deepcopy(messages)) is list
    assert pickle.loads(pickle.dumps(messages)) == list(written)
    assert context.model_dump()["messages"] == [m.model_dump() for m in written]
    assert json.loads(context.model_dump_json(by_alias=True))["messages"][1]["role"] == "user"
    assert SessionContext(messages=list(written)).messages == messages
    with pytest.raises(TypeError):
        hash(messages)


def test_a_damaged_system_message_is_reported_by_the_build(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    lines = path.read_bytes().splitlines(keepends=True)
    assert b'"sections"' in lines[6]
    lines[6] = lines[6].replace(b'"content":""', b'"content":null')  # still a role "system"
    path.write_bytes(b"".join(lines))
    session = Session.open(path)
    assert session.index.systems == [0, 5]  # what the open saw
    where = re.escape(str(path))
    with pytest.raises(SessionFileError, match=rf"{where}:7: invalid entry: message\.message"):
        session.build_context()  # the system prompt needs that line

    lenient = Session.open(path, strict=False)
    with pytest.warns(SessionFileWarning, match=rf"{where}:7: .*unknown content"):
        context = lenient.build_context()
    assert context.system_prompt is not None and "Use lists." not in context.system_prompt
    assert [m.role for m in context.messages].count("system") == 1
