"""``Session.open`` and ``build_context`` take shortcuts on the usual file (bench/session_bench.py):
lines validated a batch at a time with the structure filed in C-level passes, a file read in
slices, the path along the chain of a conversation without branches, the context read through the
index's entry types. Each is held here to the plain way it replaced, on random and damaged files:
the same entries, index, warnings (in order) and errors, the same paths, the same context."""

from __future__ import annotations

import json
import os
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.ai import (
    AssistantMessage,
    SystemMessage,
    TextContent,
    Tool,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.ai.system_message import current_system_message, system_message_text
from pi_notebook.harness import (
    ActiveToolsChangeEntry,
    CompactionEntry,
    ContextEditEntry,
    InMemorySessionStorage,
    MessageEntry,
    ModelChangeEntry,
    Session,
    SessionFileError,
    SessionFileWarning,
    SessionHeader,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    jsonl,
)
from pi_notebook.harness.entries import SessionEntry, is_system_entry
from pi_notebook.harness.jsonl import decode_session, decode_session_file
from pi_notebook.harness.messages import CompactionSummaryMessage
from pi_notebook.harness.session_context import (
    ModelRef,
    SessionContext,
    collect_messages,
    latest_edits,
)
from pi_notebook.harness.session_index import SessionIndex
from pi_notebook.harness.session_tree import entry_ms
from tests.harness.test_session_robustness import HEADER, _entry_line
from tests.harness.test_session_robustness import entry as entry_line

_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
_STAMP = "2026-01-01T00:00:01.000Z"


@st.composite
def _line(draw: st.DrawFn) -> bytes:
    """Mostly entries a file holds (messages, leaf moves, a newer pi's types), some damaged or
    blank lines and duplicate, missing, later and self parents."""
    kind = draw(st.sampled_from(["message"] * 6 + ["leaf", "future", "fuzz", "blank"]))
    if kind == "fuzz":
        return draw(_entry_line())
    if kind == "blank":
        return draw(st.sampled_from([b"", b"  ", b"\r"]))
    record: dict[str, Any] = {"type": kind, "id": draw(_IDS), "parentId": draw(st.none() | _IDS)}
    record["timestamp"] = _STAMP
    if kind == "message":
        role = draw(st.sampled_from(["user", "user", "system"]))
        record["message"] = {"role": role, "content": draw(st.text(max_size=3)), "timestamp": 1}
    elif kind == "leaf":
        record["targetId"] = draw(st.none() | _IDS)
    else:
        record["data"] = draw(st.integers())
    return json.dumps(record).encode()


def reference_path(index: SessionIndex, position: int | None) -> list[int] | None:
    """The walk by parent ids before the chain shortcut."""
    path: list[int] = []
    left = len(index.positions)
    while position is not None:
        path.append(position)
        parent = index.parent_ids[position]
        if parent is None:
            break
        position = index.positions.get(parent)
        left -= 1
        if left < 0:
            return None
    path.reverse()
    return path


def check_paths(index: SessionIndex) -> None:
    for position in [None, *range(len(index))]:
        assert index.path(position) == reference_path(index, position)


def _outcome(decode: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            decoded = decode()
            read = [entry.model_dump() for entry in decoded.entries]  # (content checked here)
        except SessionFileError as exc:
            return ("error", exc.line, exc.reason)
    index = decoded.index
    check_paths(index)
    # (a line of a system message found damaged when read is an unknown entry: left out then)
    systems = [p for p in index.systems if type(decoded.entries[p]) is not UnknownEntry]
    assert systems == [p for p, e in enumerate(decoded.entries) if is_system_entry(e)]
    fields = (index.ids, index.parent_ids, index.types, index.timestamps, index.positions)
    return (
        read,
        fields,
        index.marks,
        index.systems,
        index.tree_parents(),
        [str(w.message) for w in caught if issubclass(w.category, SessionFileWarning)],
    )


def _line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: one line per batch, every entry through ``_Decoder.add``."""
    monkeypatch.setattr(jsonl, "_BATCH_LINES", 1)
    monkeypatch.setattr(jsonl._Decoder, "_file", lambda self, *fields: False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line(), max_size=14), strict=st.booleans(), batch=st.sampled_from([2, 512]))
def test_batched_decoding_is_line_by_line_decoding(
    lines: list[bytes], strict: bool, batch: int
) -> None:
    file = [HEADER.encode(), *lines]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonl, "_BATCH_LINES", batch)
        batched = _outcome(lambda: decode_session(file, source="s.jsonl", strict=strict))
    with pytest.MonkeyPatch.context() as patch:
        _line_by_line(patch)
        reference = _outcome(lambda: decode_session(file, source="s.jsonl", strict=strict))
    assert batched == reference


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=st.lists(st.sampled_from([b"", b" "]), max_size=2),
    lines=st.lists(_line(), max_size=10),
    long=st.booleans(),
    newline=st.booleans(),
    slice_bytes=st.sampled_from([1, 7, 64, 1 << 18]),
    strict=st.booleans(),
)
def test_a_file_read_in_slices_decodes_as_its_lines(
    tmp_path_factory: pytest.TempPathFactory,
    before: list[bytes],
    lines: list[bytes],
    long: bool,
    newline: bool,
    slice_bytes: int,
    strict: bool,
) -> None:
    if long:  # a line longer than a slice
        record = json.loads(entry_line("long", None))
        record["message"]["content"] = "x" * 300
        lines = [*lines, json.dumps(record).encode()]
    data = b"\n".join([*before, HEADER.encode(), *lines]) + (b"\n" if newline else b"")
    path = tmp_path_factory.mktemp("slices") / "s.jsonl"
    path.write_bytes(data)
    reference = _outcome(lambda: decode_session(data.split(b"\n"), source="s", strict=strict))
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(jsonl, "_SLICE_BYTES", slice_bytes)
            read = _outcome(lambda: decode_session_file(fd, len(data), source="s", strict=strict))
    finally:
        os.close(fd)
    assert read == reference


def test_a_file_without_entries_or_header(tmp_path: Path) -> None:
    for data in (b"", b"\n \n"):
        path = tmp_path / "s.jsonl"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        try:
            with pytest.raises(SessionFileError, match="empty file"):
                decode_session_file(fd, len(data), source="s")
        finally:
            os.close(fd)
    path.write_bytes(HEADER.encode())  # the header alone, without its newline
    assert len(Session.open(path)) == 0


# --- the path along a chain ----------------------------------------------------------------------


@st.composite
def _links(draw: st.DrawFn) -> list[tuple[str, str | None]]:
    """(id, parent id) of entries that mostly continue a chain."""
    links: list[tuple[str, str | None]] = []
    for _ in range(draw(st.integers(0, 12))):
        previous = links[-1][0] if links else None
        parent = draw(st.sampled_from(["previous"] * 4 + ["none", "other", "gone"]))
        if parent == "previous":
            links.append((draw(_IDS), previous))
        else:
            links.append((draw(_IDS), {"none": None, "gone": "gone"}.get(parent, draw(_IDS))))
    return links


@settings(max_examples=400, deadline=None)
@given(links=_links(), split=st.integers(0, 12))
def test_the_chain_shortcut_walks_as_the_parent_ids_say(
    links: list[tuple[str, str | None]], split: int
) -> None:
    """Built at once, in two extends and entry by entry, with ids given twice (their children
    follow the last), missing, later and self parents."""
    entries: list[SessionEntry] = [
        UnknownEntry(type="x", id=entry_id, parent_id=parent) for entry_id, parent in links
    ]
    at_once = SessionIndex(list(entries))
    check_paths(at_once)
    extended = SessionIndex(entries[:split])
    extended.entries.extend(entries[split:])
    extended.extend(entries[split:])
    check_paths(extended)
    one_by_one = SessionIndex([])
    for entry in entries:
        one_by_one.entries.append(entry)
        one_by_one.add(entry)
        check_paths(one_by_one)


def test_a_conversation_is_one_chain_until_it_branches(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s.jsonl", cwd="/p")
    for turn in range(5):
        session.append_message(UserMessage(content=f"u{turn}", timestamp=turn))
    assert session.index._chain == 5
    session.set_leaf(session.get_entries()[2].id)
    session.append_message(UserMessage(content="branch", timestamp=9))
    assert session.index._chain == 5
    check_paths(session.index)
    opened = Session.open(tmp_path / "s.jsonl")
    assert opened.index._chain == 5
    check_paths(opened.index)
    assert opened.build_context() == session.build_context()


# --- the context through the index ---------------------------------------------------------------


def reference_context(session: Session) -> SessionContext:
    """``build_context`` as it walked the entry objects of the branch."""
    path = session.get_branch()
    thinking_level = "off"
    model_source: Any = None
    active_tools = None
    compaction_at = -1
    edited = False
    for index, entry in enumerate(path):
        kind = type(entry)
        if kind is MessageEntry:
            if type(entry.message) is AssistantMessage:
                model_source = entry.message
        elif kind is ThinkingLevelChangeEntry:
            thinking_level = entry.thinking_level
        elif kind is ModelChangeEntry:
            model_source = entry
        elif kind is ActiveToolsChangeEntry:
            active_tools = entry.active_tool_names
        elif kind is CompactionEntry:
            compaction_at = index
        elif kind is ContextEditEntry:
            edited = True
    messages: list[Any] = []
    if compaction_at < 0:
        collect_messages(messages, path, latest_edits(path) if edited else None)
    else:
        compaction = path[compaction_at]
        assert isinstance(compaction, CompactionEntry)
        kept = path[:compaction_at]
        first = next(
            (i for i, e in enumerate(kept) if e.id == compaction.first_kept_entry_id), len(kept)
        )
        kept = [e for e in kept[first:] if not is_system_entry(e)]
        after = path[compaction_at + 1 :]
        edits = latest_edits([compaction, *kept, *after]) if edited else None
        edit = None if edits is None else edits.get(compaction.id)
        if edit is None or edit.replacement is not None:
            if compaction.system_message is not None:
                messages.append(compaction.system_message)
            messages.append(
                CompactionSummaryMessage(
                    summary=compaction.summary,
                    tokens_before=compaction.tokens_before,
                    timestamp=entry_ms(compaction.timestamp),
                )
            )
        collect_messages(messages, kept, edits)
        collect_messages(messages, after, edits)
    model = None
    if isinstance(model_source, ModelChangeEntry):
        model = ModelRef(provider=model_source.provider, model_id=model_source.model_id)
    elif model_source is not None:
        model = ModelRef(provider=model_source.provider, model_id=model_source.model)
    system_prompt = tools = None
    if any(type(m) is SystemMessage for m in messages):
        state = current_system_message(messages)
        if state is not None:
            system_prompt = system_message_text(state)
            tools = list(state.tools_added or ())
    return SessionContext.model_construct(
        messages=messages,
        thinking_level=thinking_level,
        model=model,
        active_tool_names=None if active_tools is None else list(active_tools),
        system_prompt=system_prompt,
        tools=tools,
        tool_names=None if tools is None else [tool.name for tool in tools],
    )


def _random_step(session: Session, rng: random.Random, step: int) -> None:
    entries = [e for e in session.get_entries() if e.type != "leaf"]
    branch = session.get_branch()
    roll = rng.random()
    if roll < 0.06 and entries:
        session.set_leaf(rng.choice(entries).id)
    elif roll < 0.12:
        editable = [
            e
            for e in branch
            if (e.type == "message" and e.message.role in ("user", "assistant", "toolResult"))
            or e.type == "custom_message"
        ]
        if editable:
            replacement = rng.choice([None, "replaced", [TextContent(text="blocks")]])
            session.append_context_edit(rng.choice(editable).id, replacement)
    elif roll < 0.16:
        kept = rng.choice([None, *(e.id for e in branch[-4:])])
        session.append_compaction(f"summary {step}", kept, 100)
    elif roll < 0.22:
        session.append_system_message(
            f"rule {step}" if rng.random() < 0.5 else "",
            sections={"date": f"day {step}"},
            tools_added=[Tool(name=rng.choice(["read", "bash"]), description="t")],
        )
    elif roll < 0.25:
        session.append_branch_summary(rng.choice(["", f"left {step}"]))
    elif roll < 0.28:
        session.append_custom_message("note", f"custom {step}")
    elif roll < 0.31:
        session.append_model_change("p", f"m{step}")
    elif roll < 0.34:
        session.append_thinking_level_change(rng.choice(["low", "high"]))
    elif roll < 0.36:
        session.append_active_tools_change(["read"])
    elif roll < 0.40:
        session.append_usage("cache_warm", "p", "m", {"cacheWrite": 5})
    elif roll < 0.44 and entries:
        session.append_label(rng.choice(entries).id, "l")
    elif roll < 0.65:
        session.append_message(UserMessage(content=f"user {step}", timestamp=step))
    elif roll < 0.8:
        session.append_message(
            ToolResultMessage(tool_call_id="c", tool_name="read", content=[], timestamp=step)
        )
    else:
        session.append_message(faux_assistant_message(f"reply {step}"))


@pytest.mark.parametrize("seed", range(12))
def test_the_context_read_through_the_index_is_the_walked_context(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "s.jsonl"
    session = Session.create(path, cwd="/p")
    for step in range(120):
        _random_step(session, rng, step)
        if step % 10 == 0:
            assert session.build_context() == reference_context(session)
    assert session.build_context() == reference_context(session)
    opened = Session.open(path)
    assert opened.build_context() == reference_context(opened) == session.build_context()
    memory = InMemorySessionStorage()
    memory.create(session.header, session.get_entries())
    again = Session.open(memory)
    assert again.build_context() == reference_context(again) == session.build_context()


def test_a_hand_made_entry_of_a_message_type_is_no_message() -> None:
    """Only decoding makes a type string and a class agree; a hand-made list may not."""
    odd = UnknownEntry.model_validate(
        {"type": "message", "id": "b", "parentId": "a", "timestamp": _STAMP, "message": {}}
    )
    first = MessageEntry(
        id="a", parent_id=None, timestamp=_STAMP, message=UserMessage(content="hi", timestamp=1)
    )
    header = SessionHeader(id="s", timestamp=_STAMP)
    session = Session(InMemorySessionStorage(), header, [first, odd])
    assert session.build_context() == reference_context(session)
    assert [m.role for m in session.build_context().messages] == ["user"]
