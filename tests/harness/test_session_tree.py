"""The session tree: leaf moves, branches, labels, names, context building, forks, and the harness
message roles with their conversion for the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from pi_notebook.harness import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    InMemorySessionStorage,
    Session,
    convert_to_llm,
)


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1)


def assistant(text: str, model: str = "m1", provider: str = "p") -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], api="a", provider=provider, model=model, timestamp=2
    )


def roles(session: Session) -> list[str]:
    return [m.role for m in session.build_context().messages]


def texts(session: Session) -> list[str]:
    out = []
    for message in convert_to_llm(session.build_context().messages):
        content = message.content
        out.append(content if isinstance(content, str) else content[0].text)  # type: ignore[union-attr]
    return out


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return Session.create(tmp_path / "s.jsonl", cwd="/p")


# --- leaf and branches ---------------------------------------------------------------------------


def test_appends_chain_from_the_leaf(session: Session) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    c = session.append_thinking_level_change("high")
    assert (a.parent_id, b.parent_id, c.parent_id) == (None, a.id, b.id)
    assert session.leaf_id == c.id and session.leaf_entry == c
    assert session.get_branch() == [a, b, c]
    assert session.get_branch(b.id) == [a, b]
    assert session.get_entry(b.id) == b and session.get_entry("nope") is None


def test_set_leaf_branches_and_writes_nothing_as_pi_16(session: Session) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    before = session.path.read_bytes()  # type: ignore[union-attr]
    assert session.set_leaf(a.id) is None and session.leaf_id == a.id
    assert session.path.read_bytes() == before  # type: ignore[union-attr]
    assert texts(session) == ["a"]
    c = session.append_message(assistant("c"))
    assert c.parent_id == a.id
    assert [e.id for e in session.get_children(a.id)] == [b.id, c.id]
    assert texts(session) == ["a", "c"]
    reopened = Session.open(session.path)  # type: ignore[arg-type]
    assert reopened.leaf_id == c.id and texts(reopened) == ["a", "c"]


def test_leaf_none_starts_a_new_root_and_empties_the_context(session: Session) -> None:
    session.append_message(user("a"))
    assert session.set_leaf(None) is None and session.leaf_id is None
    context = session.build_context()
    assert context.messages == [] and context.model is None and context.thinking_level == "off"
    root = session.append_message(user("fresh"))
    assert root.parent_id is None
    assert len(session.get_tree()) == 2
    assert Session.open(session.path).leaf_id == root.id  # type: ignore[arg-type]


def test_set_leaf_rejects_unknown_ids_and_older_leaf_moves(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    a = session.append_message(user("a"))
    with pytest.raises(ValueError, match="Entry zz not found"):
        session.set_leaf("zz")
    with pytest.raises(ValueError, match="not found"):
        session.get_branch("zz")
    move = {"type": "leaf", "id": "leaf0001", "parentId": a.id}  # as pi's 0.79 harness wrote it
    move |= {"timestamp": "2026-11-20T12:00:00.000Z", "targetId": a.id}
    with path.open("a") as file:
        file.write(json.dumps(move, separators=(",", ":")) + "\n")
    reopened = Session.open(path)
    assert reopened.leaf_id == a.id
    with pytest.raises(ValueError, match="leaf move"):
        reopened.set_leaf("leaf0001")
    assert [n.entry.id for n in reopened.get_tree()] == [a.id]  # a move is no tree node
    assert len(reopened.get_entries()) == 2


def test_tree_sorts_children_by_time_and_keeps_orphans_as_roots() -> None:
    storage = InMemorySessionStorage()
    base = Session.create(storage, cwd="/p")
    a = base.append_message(user("a"))
    late = base.append_message(assistant("late"))
    base.set_leaf(a.id)
    early = base.append_message(assistant("early"))
    entries = [
        *base.get_entries(),
        early.model_copy(update={"id": "orphan", "parent_id": "missing"}),
    ]
    # make "late" older than "early" by its timestamp although it was appended first
    entries[1] = late.model_copy(update={"timestamp": "2000-01-01T00:00:00.000Z"})
    swapped = InMemorySessionStorage()
    swapped.create(base.header, entries)
    tree = Session.open(swapped).get_tree()
    assert [n.entry.id for n in tree] == [a.id, "orphan"]
    assert [n.entry.id for n in tree[0].children] == [late.id, early.id]


# --- labels and name -----------------------------------------------------------------------------


def test_labels_latest_wins_and_empty_clears(session: Session) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    session.append_label(a.id, "start")
    session.append_label(a.id, "begin")
    session.append_label(b.id, "answer")
    assert session.get_label(a.id) == "begin"
    session.append_label(b.id, None)
    session.append_label(a.id, "")
    assert session.get_label(a.id) is None and session.get_label(b.id) is None
    session.append_label(b.id, "again")
    assert session.labels == {b.id: "again"}
    session.append_label(a.id, "keep")
    spaces = session.append_label(a.id, "   ")  # a label for pi 1.6 too (JS: "   " is truthy)
    assert spaces.label == "   " and session.get_label(a.id) == "   "
    assert session.labels == {a.id: "   ", b.id: "again"}
    with pytest.raises(ValueError, match="not found"):
        session.append_label("zz", "x")
    reopened = Session.open(session.path)  # type: ignore[arg-type]
    assert reopened.get_label(b.id) == "again" and reopened.get_label(a.id) == "   "
    labels = {node.entry.id: node.label for node in _walk(reopened.get_tree())}
    assert labels[b.id] == "again" and labels[a.id] == "   "


def test_label_entries_are_appended_on_the_branch(session: Session) -> None:
    a = session.append_message(user("a"))
    label = session.append_label(a.id, "x")
    assert label.parent_id == a.id and session.leaf_id == label.id
    assert texts(session) == ["a"]


def test_session_name_is_trimmed_and_can_be_cleared(session: Session) -> None:
    assert session.name is None
    info = session.append_session_info("  My run  ")
    assert info.name == "My run" and session.name == "My run"
    session.append_session_info("   ")
    assert session.name is None
    session.append_session_info("Final")
    assert Session.open(session.path).name == "Final"  # type: ignore[arg-type]


def _walk(nodes):  # type: ignore[no-untyped-def]
    for node in nodes:
        yield node
        yield from _walk(node.children)


# --- context -------------------------------------------------------------------------------------


def test_context_settings_are_the_last_on_the_branch(session: Session) -> None:
    session.append_model_change("anthropic", "claude")
    session.append_thinking_level_change("medium")
    session.append_active_tools_change(["read", "bash"])
    session.append_message(user("q"))
    context = session.build_context()
    assert context.model is not None and context.model.to_json_dict() == {
        "provider": "anthropic",
        "modelId": "claude",
    }
    assert (context.thinking_level, context.active_tool_names) == ("medium", ["read", "bash"])
    reply = session.append_message(assistant("r", model="gpt", provider="openai"))
    assert session.build_context().model.model_id == "gpt"  # type: ignore[union-attr]
    session.append_model_change("google", "gemini")
    session.append_active_tools_change([])
    context = session.build_context()
    assert context.model.provider == "google" and context.active_tool_names == []  # type: ignore[union-attr]
    session.set_leaf(reply.id)
    assert session.build_context().model.provider == "openai"  # type: ignore[union-attr]


def test_context_defaults(session: Session) -> None:
    session.append_message(user("q"))
    context = session.build_context()
    assert context.thinking_level == "off" and context.model is None
    assert context.active_tool_names is None


def test_compaction_keeps_summary_then_kept_entries_then_the_rest(session: Session) -> None:
    session.append_message(user("u1"))
    session.append_message(assistant("a1"))
    kept = session.append_message(user("u2"))
    session.append_message(assistant("a2"))
    compaction = session.append_compaction("S", kept.id, 1234, {"readFiles": []}, False)
    session.append_message(user("u3"))
    context = session.build_context()
    assert [m.role for m in context.messages] == [
        "compactionSummary",
        "user",
        "assistant",
        "user",
    ]
    summary = context.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert (summary.summary, summary.tokens_before) == ("S", 1234)
    assert summary.timestamp == _ms(compaction.timestamp)
    assert texts(session)[1:] == ["u2", "a2", "u3"]


def test_compaction_with_first_kept_off_the_branch_keeps_nothing_before_it(
    session: Session,
) -> None:
    session.append_message(user("u1"))
    session.append_compaction("S", "not-on-branch", 10)
    session.append_message(user("u2"))
    assert texts(session)[1:] == ["u2"]


def test_only_the_latest_compaction_counts(session: Session) -> None:
    first = session.append_message(user("u1"))
    session.append_compaction("S1", first.id, 10)
    second = session.append_message(user("u2"))
    session.append_compaction("S2", second.id, 20)
    session.append_message(user("u3"))
    context = session.build_context()
    assert [m.role for m in context.messages] == ["compactionSummary", "user", "user"]
    assert context.messages[0].summary == "S2"  # type: ignore[union-attr]


def test_branch_summaries_and_custom_messages_enter_the_context(session: Session) -> None:
    a = session.append_message(user("a"))
    session.append_message(assistant("abandoned"))
    session.set_leaf(a.id)
    summary = session.append_branch_summary("what happened", details={"readFiles": ["x"]})
    assert summary.from_id == a.id and summary.parent_id == a.id
    session.append_branch_summary("")  # empty summaries contribute nothing
    session.append_custom("state", {"k": 1})  # never in context
    custom = session.append_custom_message("note", "remember this", display=False, details=[1])
    session.append_custom_message("pic", [ImageContent(data="AAAA", mime_type="image/png")])
    context = session.build_context()
    assert [m.role for m in context.messages] == ["user", "branchSummary", "custom", "custom"]
    branch = context.messages[1]
    assert isinstance(branch, BranchSummaryMessage) and branch.from_id == a.id
    note = context.messages[2]
    assert isinstance(note, CustomMessage)
    assert (note.custom_type, note.content, note.display, note.details) == (
        "note",
        "remember this",
        False,
        [1],
    )
    assert note.timestamp == _ms(custom.timestamp)
    line = json.loads(session.path.read_text().split("\n")[-3])  # type: ignore[union-attr]
    assert list(line) == [
        "type",
        "customType",
        "content",
        "display",
        "details",
        "id",
        "parentId",
        "timestamp",
    ]


def test_branch_summary_from_before_the_first_entry_is_from_root(session: Session) -> None:
    session.append_message(user("a"))
    session.set_leaf(None)
    summary = session.append_branch_summary("s")
    assert summary.from_id == "root" and summary.parent_id is None


def test_summary_messages_cannot_be_appended_as_messages(session: Session) -> None:
    with pytest.raises(ValueError, match="append_compaction"):
        session.append_message(CompactionSummaryMessage(summary="s", tokens_before=1))
    with pytest.raises(ValueError, match="append_branch_summary"):
        session.append_message(BranchSummaryMessage(summary="s", from_id="x"))
    bash = session.append_message(BashExecutionMessage(command="ls", output="a", exit_code=0))
    assert roles(session) == ["bashExecution"] and bash.message.role == "bashExecution"


def _ms(timestamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(timestamp).timestamp() * 1000 + 0.5)


# --- fork ----------------------------------------------------------------------------------------


def test_fork_everything_copies_every_entry(session: Session, tmp_path: Path) -> None:
    a = session.append_message(user("a"))
    session.append_message(assistant("b"))
    session.set_leaf(a.id)
    forked = session.fork(tmp_path / "all.jsonl")
    assert forked.get_entries() == session.get_entries()
    assert forked.leaf_id == session.leaf_id == a.id and forked.id != session.id
    assert forked.header.parent_session == str(session.path)
    assert Session.open(tmp_path / "all.jsonl").get_entries() == session.get_entries()


def test_fork_at_copies_the_branch_and_relabels(session: Session, tmp_path: Path) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    session.append_label(a.id, "start")
    c = session.append_message(user("c"))
    session.set_leaf(b.id)
    session.append_label(b.id, "answer")  # a label off c's branch
    session.append_message(user("other"))
    session.append_label(a.id, None)  # cleared off c's branch too
    forked = session.fork(tmp_path / "at.jsonl", c.id, position="at")
    on_branch = session.get_branch(c.id)
    entries = forked.get_entries()
    assert entries[:4] == on_branch  # a, b, label(a), c: the chain stays whole
    relabels = entries[4:]
    assert [(e.target_id, e.label) for e in relabels] == [(a.id, None), (b.id, "answer")]  # type: ignore[union-attr]
    assert relabels[0].parent_id == c.id and relabels[1].parent_id == relabels[0].id
    assert forked.get_label(a.id) is None and forked.get_label(b.id) == "answer"
    assert forked.leaf_id == relabels[-1].id
    assert texts(forked) == ["a", "b", "c"]


def test_fork_before_a_user_message_stops_at_its_parent(session: Session, tmp_path: Path) -> None:
    a = session.append_message(user("a"))
    b = session.append_message(assistant("b"))
    c = session.append_message(user("c"))
    forked = session.fork(tmp_path / "before.jsonl", c.id)
    assert [e.id for e in forked.get_entries()] == [a.id, b.id]
    assert forked.leaf_id == b.id
    first = session.fork(tmp_path / "first.jsonl", a.id)
    assert len(first) == 0 and first.leaf_id is None
    with pytest.raises(ValueError, match="needs a user message"):
        session.fork(tmp_path / "x.jsonl", b.id)
    with pytest.raises(ValueError, match="position"):
        session.fork(tmp_path / "y.jsonl", b.id, position="after")  # type: ignore[arg-type]
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "y.jsonl").exists()


def test_fork_of_an_in_memory_session_has_no_parent_file(tmp_path: Path) -> None:
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    session.append_message(user("a"))
    forked = session.fork(InMemorySessionStorage())
    assert forked.header.parent_session is None and forked.cwd == "/p"
    assert "parentSession" not in forked.header.to_json_dict()


# --- harness messages and their conversion -------------------------------------------------------


def _text(message: object) -> str:
    assert isinstance(message, UserMessage) and not isinstance(message.content, str)
    block = message.content[0]
    assert isinstance(block, TextContent)
    return block.text


def test_bash_execution_texts() -> None:
    def convert(**fields: object) -> str:
        (message,) = convert_to_llm([BashExecutionMessage(command="ls -l", **fields)])  # type: ignore[arg-type]
        return _text(message)

    assert convert(output="a\nb", exit_code=0) == "Ran `ls -l`\n```\na\nb\n```"
    assert convert(output="") == "Ran `ls -l`\n(no output)"
    assert convert(output="x", exit_code=2) == (
        "Ran `ls -l`\n```\nx\n```\n\nCommand exited with code 2"
    )
    assert convert(output="x", exit_code=130, cancelled=True) == (
        "Ran `ls -l`\n```\nx\n```\n\n(command cancelled)"
    )
    assert convert(output="x", truncated=True, full_output_path="/tmp/out") == (
        "Ran `ls -l`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/out]"
    )
    assert convert(output="x", truncated=True) == "Ran `ls -l`\n```\nx\n```"
    excluded = BashExecutionMessage(command="ls", output="", exclude_from_context=True)
    assert convert_to_llm([excluded]) == []


def test_summary_texts_keep_pis_asymmetric_newline() -> None:
    compaction, branch = convert_to_llm(
        [
            CompactionSummaryMessage(summary="S1", tokens_before=5, timestamp=7),
            BranchSummaryMessage(summary="S2", from_id="x", timestamp=8),
        ]
    )
    assert _text(compaction) == (
        "The conversation history before this point was compacted into the following summary:"
        "\n\n<summary>\nS1\n</summary>"
    )
    assert _text(branch) == (
        "The following is a summary of a branch that this conversation came back from:"
        "\n\n<summary>\nS2</summary>"
    )
    assert (compaction.timestamp, branch.timestamp) == (7, 8)


def test_custom_messages_become_user_messages_and_others_pass_through() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    u, a = user("u"), assistant("a")
    r = ToolResultMessage(tool_call_id="c", tool_name="t", content=[TextContent(text="r")])

    class Foreign:
        role = "notification"

    converted = convert_to_llm(
        [
            u,
            CustomMessage(custom_type="n", content="plain", timestamp=3),
            CustomMessage(custom_type="n", content=[image], display=False, details={"x": 1}),
            Foreign(),
            a,
            r,
        ]
    )
    assert converted[0] is u and converted[3] is a and converted[4] is r
    assert _text(converted[1]) == "plain" and converted[1].timestamp == 3
    assert converted[2].content == [image]  # type: ignore[union-attr]
    assert len(converted) == 5


def test_harness_messages_serialise_as_pi_does() -> None:
    bash = BashExecutionMessage(command="c", output="o", exit_code=None, timestamp=1)
    assert bash.to_json_dict() == {
        "role": "bashExecution",
        "command": "c",
        "output": "o",
        "cancelled": False,
        "truncated": False,
        "timestamp": 1,
    }
    custom = CustomMessage(custom_type="t", content="x", details={"a": 1}, timestamp=2)
    assert list(custom.to_json_dict()) == [
        "role",
        "customType",
        "content",
        "display",
        "details",
        "timestamp",
    ]
    assert BranchSummaryMessage(summary="s", from_id="f", timestamp=3).to_json_dict() == {
        "role": "branchSummary",
        "summary": "s",
        "fromId": "f",
        "timestamp": 3,
    }
    assert CompactionSummaryMessage(summary="s", tokens_before=4, timestamp=5).to_json_dict() == {
        "role": "compactionSummary",
        "summary": "s",
        "tokensBefore": 4,
        "timestamp": 5,
    }
