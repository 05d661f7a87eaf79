"""The pi 1.6 appends of ``Session``: system messages, context edits, usage entries, compaction
checkpoints, and what each refuses (pi's checks); leaf moves that survive a reopen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    Cost,
    TextContent,
    Tool,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.harness import (
    ContextEditEntry,
    Session,
    UnknownEntry,
    UsageEntry,
)
from pi_notebook.harness.jsonl import encode_record


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1)


def assistant(text: str) -> AssistantMessage:
    usage = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.5))
    return AssistantMessage(
        content=[TextContent(text=text)], api="a", provider="p", model="m", usage=usage, timestamp=2
    )


def tool(name: str, description: str = "") -> Tool:
    return Tool(name=name, description=description or name)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "s.jsonl", cwd="/p")


def test_system_messages_replay_into_prompt_and_tools(session: Session) -> None:
    assert session.build_context().system_prompt is None
    session.append_system_message(
        "Base.", sections={"a": "A", "b": "B"}, tools_added=[tool("read"), tool("bash")]
    )
    session.append_message(user("hi"))
    session.append_system_message(
        sections={"a": "A2", "b": None}, tools_removed=["bash"], tools_added=[tool("read", "v2")]
    )
    context = Session.open(session.path).build_context()  # type: ignore[arg-type]
    assert context.system_prompt == "Base.\n\nA2"
    assert context.tool_names == ["read"] and context.tools is not None
    assert context.tools[0].description == "v2"
    assert [m.role for m in context.messages] == ["system", "user", "system"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "must add text, patch a section or change tools"),
        ({"sections": {"": "x"}}, "section names"),
        ({"tools_added": [tool("x"), tool("x")]}, "adds tool\\(s\\) twice: x"),
        ({"tools_removed": ["nope"]}, "Cannot remove undeclared tool\\(s\\): nope"),
    ],
)
def test_system_messages_are_checked(session: Session, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        session.append_system_message(**kwargs)
    assert len(session) == 0


def test_context_edits_hide_and_replace_on_their_branch_only(session: Session) -> None:
    question = session.append_message(user("long question"))
    answer = session.append_message(assistant("long answer"))
    result = session.append_message(
        ToolResultMessage(tool_call_id="c", tool_name="t", content=[TextContent(text="x")])
    )
    edit = session.append_context_edit(answer.id, "short")
    assert isinstance(edit, ContextEditEntry) and edit.replacement is not None
    assert edit.replacement.content == [TextContent(text="short")]  # a text block, as pi stores it
    session.append_context_edit(result.id, None)
    session.append_context_edit(question.id, "q1")
    session.append_context_edit(question.id, {"content": "q2"})  # the latest wins
    session.append_message(assistant("more"))
    line = json.loads(session.path.read_text().splitlines()[5])  # type: ignore[union-attr]
    assert line["replacement"] is None and list(line) == [
        "type", "id", "parentId", "timestamp", "targetId", "replacement",
    ]  # fmt: skip
    messages = session.build_context().messages
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]
    assert messages[0].content == "q2"  # type: ignore[union-attr]
    assert messages[1].content == [TextContent(text="short")]  # type: ignore[union-attr]
    assert session.get_entry(answer.id).message.text == "long answer"  # type: ignore[union-attr]
    session.set_leaf(result.id)  # before the edits: nothing edited there
    assert [m.role for m in session.build_context().messages] == ["user", "assistant", "toolResult"]


def test_context_edits_are_checked(session: Session) -> None:
    system = session.append_system_message("S")
    first = session.append_message(user("a"))
    session.append_message(assistant("b"))
    session.set_leaf(first.id)
    other = session.append_message(assistant("c"))
    with pytest.raises(ValueError, match="not found"):
        session.append_context_edit("zz", None)
    with pytest.raises(ValueError, match="does not contribute editable"):
        session.append_context_edit(system.id, None)
    off_branch = session.get_children(first.id)[0]
    with pytest.raises(ValueError, match="not on the active branch"):
        session.append_context_edit(off_branch.id, None)
    with pytest.raises(ValueError, match="must be None or string/list content"):
        session.append_context_edit(other.id, {"text": "no content key"})
    with pytest.raises(ValueError, match="Invalid context edit replacement"):
        session.append_context_edit(other.id, [{"type": "nonsense"}])  # type: ignore[list-item]
    assert session.leaf_id == other.id and len(session) == 4  # nothing was written


def test_usage_entries_count_in_the_totals_but_not_the_context(session: Session) -> None:
    session.append_message(user("a"))
    session.append_message(assistant("b"))
    entry = session.append_usage(
        "cache_warm", "p", "m", {"input": 1, "output": 0, "cacheWrite": 400, "totalTokens": 401}
    )
    assert isinstance(entry, UsageEntry) and "note" not in entry.to_json_dict()
    session.append_branch_summary("s", usage=Usage(input=7, cost=Cost(total=0.25)))
    totals = Session.open(session.path).usage_totals()  # type: ignore[arg-type]
    assert (totals.input, totals.output, totals.cache_write, totals.total_tokens) == (
        18,
        5,
        400,
        423,
    )
    assert totals.cost == pytest.approx(0.75)
    assert [m.role for m in session.build_context().messages] == [
        "user",
        "assistant",
        "branchSummary",
    ]
    with pytest.raises(ValueError, match="needs a kind"):
        session.append_usage("", "p", "m", Usage())


def test_compaction_snapshots_the_system_message_and_retain_none(session: Session) -> None:
    session.append_system_message("S", sections={"x": "X"}, tools_added=[tool("read")])
    session.append_message(user("a"))
    session.append_message(assistant("b"))
    compaction = session.append_compaction("summary", None, 100)
    assert compaction.first_kept_entry_id == compaction.id  # retain-none
    assert compaction.system_message is not None
    assert compaction.system_message.sections == {"x": "X"}
    session.append_message(user("c"))
    context = Session.open(session.path).build_context()  # type: ignore[arg-type]
    assert [m.role for m in context.messages] == ["system", "compactionSummary", "user"]
    assert context.system_prompt == "S\n\nX" and context.tool_names == ["read"]
    plain = Session.create(session.path.with_name("plain.jsonl"), cwd="/p")  # type: ignore[union-attr]
    plain.append_message(user("a"))
    assert plain.append_compaction("s", None, 1).system_message is None


def test_a_leaf_move_writes_nothing_as_in_pi_16(session: Session) -> None:
    """pi 1.6 writes nothing when it moves (``SessionManager.branch``): what is appended next
    hangs under the target, and a file reopened before that resumes at its last line."""
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    path = session.path
    assert path is not None
    before = path.read_bytes()
    assert session.set_leaf(a.id) is None
    assert path.read_bytes() == before and session.leaf_id == a.id
    assert Session.open(path).leaf_id == b.id  # as pi: the last line
    c = session.append_message(user("c"))
    assert c.parent_id == a.id
    reopened = Session.open(path)
    assert reopened.leaf_id == c.id
    assert [m.role for m in reopened.build_context().messages] == ["user", "user"]


def test_unknown_entries_are_kept_in_the_tree_and_out_of_the_context(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    a = session.append_message(user("a"))
    path = session.path
    assert path is not None
    with path.open("a") as file:
        file.write(
            '{"type":"from_the_future","id":"f1","parentId":"' + a.id + '",'
            '"timestamp":"2026-11-20T12:00:00.000Z","data":{"x":[1]}}\n'
        )
    reopened = Session.open(path)
    unknown = reopened.get_entry("f1")
    assert isinstance(unknown, UnknownEntry) and unknown.to_json_dict()["data"] == {"x": [1]}
    assert reopened.leaf_id == "f1" and [m.role for m in reopened.build_context().messages] == [
        "user"
    ]
    b = reopened.append_message(assistant("b"))
    assert b.parent_id == "f1"
    assert '"data":{"x":[1]}' in path.read_text()


def test_unknown_lines_round_trip_exactly(tmp_path: Path) -> None:
    lines = [
        '{"type":"future","id":"u1","parentId":null,"timestamp":"2026-11-20T12:00:00.000Z"}',
        '{"type":"future","id":"u2","extra":[1,{"a":null}]}',  # no parentId, no timestamp
        '{"type":"message","id":"u3","parentId":"u1","timestamp":"2026-11-20T12:00:01.000Z",'
        '"message":{"role":"from_pi_2","content":[],"timestamp":1}}',  # an unknown role
    ]
    header = (
        '{"type":"session","version":3,"id":"s","timestamp":"2026-11-20T12:00:00.000Z","cwd":"/p"}'
    )
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([header, *lines]) + "\n")
    session = Session.open(path)
    assert [type(e) for e in session.get_entries()] == [UnknownEntry] * 3
    assert [encode_record(e).decode().rstrip("\n") for e in session.get_entries()] == lines
    assert session.build_context().messages == [] and len(session.get_tree()) == 2


def test_a_pending_reply_is_never_persisted(session: Session) -> None:
    partial = assistant("half").model_copy(update={"stop_reason": "pending"})
    with pytest.raises(ValueError, match="pending"):
        session.append_message(partial)
    assert len(session) == 0
    deferred = assistant("").model_copy(update={"stop_reason": "deferred"})
    assert session.append_message(deferred).message.stop_reason == "deferred"  # type: ignore[union-attr]


def test_the_names_design_fixes_for_pi_1_6() -> None:
    """Public names for pi 1.6 sessions: tests outside the repository call these."""
    import inspect

    from pi_notebook.harness import SessionContext

    edit = inspect.signature(Session.append_context_edit).parameters
    assert list(edit) == ["self", "target_id", "replacement"]
    usage = inspect.signature(Session.append_usage).parameters
    assert list(usage) == ["self", "kind", "provider", "model", "usage", "note"]
    assert usage["note"].default is None
    assert {"system_prompt", "tool_names"} <= set(SessionContext.model_fields)
