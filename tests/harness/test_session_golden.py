"""Session files written by pi itself open unchanged, re-serialise byte for byte, and give what pi
computes from them (``golden/sample-session.tree.txt``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage
from pi_notebook.harness import (
    BranchSummaryEntry,
    CompactionEntry,
    MessageEntry,
    Session,
    SessionTreeNode,
    convert_to_llm,
)
from pi_notebook.harness.jsonl import ENTRY_ADAPTER, encode_record
from tests.paths import GOLDEN

SAMPLE = GOLDEN / "sample-session.jsonl"
HARNESS = GOLDEN / "harness-session.jsonl"
TREE = GOLDEN / "sample-session.tree.txt"


@pytest.mark.parametrize("path", [SAMPLE, HARNESS], ids=["pi-coding-agent", "pi-harness"])
def test_golden_files_open_unchanged(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    assert path.read_bytes() == before
    assert len(session) == before.count(b"\n") - 1


@pytest.mark.parametrize("path", [SAMPLE, HARNESS], ids=["pi-coding-agent", "pi-harness"])
def test_every_line_reserialises_byte_for_byte(path: Path) -> None:
    header, *lines = [line + b"\n" for line in path.read_bytes().split(b"\n")[:-1]]
    session = Session.open(path)
    assert encode_record(session.header) == header
    assert [encode_record(entry) for entry in session.get_entries()] == lines
    for line in lines:  # and each line on its own, through the public entry union
        assert encode_record(ENTRY_ADAPTER.validate_json(line)) == line


def test_appending_keeps_the_file_readable_by_the_same_rules(tmp_path: Path) -> None:
    copy = tmp_path / "sample.jsonl"
    shutil.copy(SAMPLE, copy)
    session = Session.open(copy)
    session.append_session_info("Renamed")
    assert copy.read_bytes().startswith(SAMPLE.read_bytes())
    assert Session.open(copy).name == "Renamed"


# --- what pi computed from the sample ------------------------------------------------------------


def _tree_lines() -> list[tuple[int, str, str]]:
    """``(depth, id, rest)`` of each node line of the tree dump."""
    text = TREE.read_text(encoding="utf-8")
    section = text.split("tree (getTree):\n", 1)[1]
    nodes = []
    for line in section.splitlines():
        match = re.fullmatch(r"( *)- (\w+) \[[^\]]*\] (.*)", line)
        if match:
            nodes.append((len(match[1]) // 2, match[2], match[3]))
    return nodes


def _field(name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", TREE.read_text(encoding="utf-8"), re.MULTILINE)
    assert match, name
    return match[1]


def _flatten(nodes: list[SessionTreeNode], depth: int = 0) -> list[tuple[int, SessionTreeNode]]:
    out = []
    for node in nodes:
        out.append((depth, node))
        out.extend(_flatten(node.children, depth + 1))
    return out


def test_sample_tree_matches_pi() -> None:
    session = Session.open(SAMPLE)
    expected = _tree_lines()
    actual = _flatten(session.get_tree())
    assert [(d, n.entry.id) for d, n in actual] == [(d, i) for d, i, _ in expected]
    for (_, node), (_, _, rest) in zip(actual, expected, strict=True):
        kind = rest.split()[0].split("(")[0]
        entry = node.entry
        if isinstance(entry, MessageEntry):
            assert kind == entry.message.role
            if isinstance(entry.message, AssistantMessage):
                assert rest.startswith(f"assistant({entry.message.stop_reason})")
        else:
            assert kind == entry.type
        label = re.search(r'label="([^"]*)"', rest)
        assert node.label == (label[1] if label else None)


def test_sample_name_leaf_and_context_match_pi() -> None:
    session = Session.open(SAMPLE)
    assert session.name == _field("session name")
    assert session.leaf_id == _field("leaf after reopen").split()[0]
    assert session.header.id in _field("file")
    context = session.build_context()
    settings = _field(r"buildSessionContext\(\)")
    assert f"thinkingLevel={context.thinking_level} " in settings
    assert context.model is not None
    assert settings.endswith(f"model={context.model.model_dump_json(by_alias=True)}")
    assert _field("  messages") == ", ".join(m.role for m in context.messages)


def test_sample_compaction_and_branch_summary_match_pi() -> None:
    session = Session.open(SAMPLE)
    compaction = next(e for e in session.get_branch() if isinstance(e, CompactionEntry))
    line = _field("compaction")
    assert f"firstKeptEntryId={compaction.first_kept_entry_id} " in line
    assert f"tokensBefore={compaction.tokens_before} " in line
    summary = next(e for e in session.get_branch() if isinstance(e, BranchSummaryEntry))
    assert f"fromId={summary.from_id} " in _field("branch summary")
    kept = [e.id for e in session.get_branch()]
    assert kept.index(compaction.first_kept_entry_id) < kept.index(compaction.id)
    llm = convert_to_llm(session.build_context().messages)
    expected = ["user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert [m.role for m in llm] == expected  # the summary is sent as a user message


def test_harness_file_resumes_at_its_leaf_entries() -> None:
    session = Session.open(HARNESS)
    entries = session.get_entries()
    leaf_move = next(e for e in entries if e.type == "leaf")
    compaction = entries[-1]
    assert isinstance(compaction, CompactionEntry)
    assert session.leaf_id == compaction.id
    branch = session.get_branch()
    assert leaf_move not in branch
    assert leaf_move.target_id in {e.id for e in branch}  # type: ignore[union-attr]
    context = session.build_context()
    # the thinking-level change lies on the abandoned branch (pi reports "off" too)
    assert context.thinking_level == "off"
    assert context.model is not None and context.model.provider == "faux"
    assert [m.role for m in context.messages] == [
        "compactionSummary",
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
        "branchSummary",
        "user",
        "assistant",
    ]
    assert context.messages[0].summary.startswith("## Goal")  # type: ignore[union-attr]
