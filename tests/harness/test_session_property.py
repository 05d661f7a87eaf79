"""Random sessions (appends, branches, labels, leaf moves, compactions, summaries) round-trip
through the JSONL file: reopened, they give the same entries, tree and context as the live session
and as the in-memory store; and the context agrees with an independent reading of the raw JSON
lines by pi's rules."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.ai import (
    AssistantMessage,
    Cost,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.harness import (
    BashExecutionMessage,
    InMemorySessionStorage,
    JsonlSessionStorage,
    LeafEntry,
    Session,
    SessionEntry,
    SessionHeader,
    SessionStorage,
    SessionTreeNode,
)


class TeeStorage(SessionStorage):
    """Writes through to several stores; reads from the first."""

    def __init__(self, *stores: SessionStorage) -> None:
        self.stores = stores

    def create(self, header: SessionHeader, entries: Iterable[SessionEntry] = ()) -> None:
        entries = list(entries)
        for store in self.stores:
            store.create(header, entries)

    def load(self) -> tuple[SessionHeader, list[SessionEntry]]:
        return self.stores[0].load()

    def append(self, entry: SessionEntry) -> None:
        for store in self.stores:
            store.append(entry)


TEXT = st.text(max_size=12)
JSON_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
OPS = [
    "user",
    "assistant",
    "tool_result",
    "bash",
    "model",
    "thinking",
    "tools",
    "label",
    "name",
    "leaf",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
]


def _positions(session: Session) -> list[str]:
    return [e.id for e in session.get_entries() if not isinstance(e, LeafEntry)]


def apply(session: Session, data: st.DataObject, op: str) -> None:
    draw = data.draw
    if op == "user":
        session.append_message(UserMessage(content=draw(TEXT), timestamp=draw(st.integers(0))))
    elif op == "assistant":
        cost = Cost(input=draw(st.floats(0, 1)), total=draw(st.floats(0, 1e-5)))
        content = [
            TextContent(text=draw(TEXT)),
            ThinkingContent(thinking=draw(TEXT)),
            ToolCall(id="c1", name="read", arguments={"path": draw(TEXT)}),
        ]
        session.append_message(
            AssistantMessage(
                content=draw(st.lists(st.sampled_from(content), max_size=3)),
                api="anthropic-messages",
                provider=draw(st.sampled_from(["anthropic", "openai"])),
                model=draw(st.sampled_from(["m1", "m2"])),
                usage=Usage(input=draw(st.integers(0, 10**6)), cost=cost),
                stop_reason=draw(st.sampled_from(["stop", "toolUse", "error"])),
                error_message=draw(st.none() | TEXT),
                timestamp=draw(st.integers(0, 2**50)),
            )
        )
    elif op == "tool_result":
        session.append_message(
            ToolResultMessage(
                tool_call_id="c1",
                tool_name="read",
                content=[TextContent(text=draw(TEXT))],
                details=draw(JSON_VALUE),
                is_error=draw(st.booleans()),
            )
        )
    elif op == "bash":
        session.append_message(
            BashExecutionMessage(
                command=draw(TEXT),
                output=draw(TEXT),
                exit_code=draw(st.none() | st.integers(0, 255)),
                exclude_from_context=draw(st.none() | st.booleans()),
            )
        )
    elif op == "model":
        session.append_model_change(draw(TEXT), draw(TEXT))
    elif op == "thinking":
        session.append_thinking_level_change(draw(st.sampled_from(["off", "low", "high"])))
    elif op == "tools":
        session.append_active_tools_change(draw(st.lists(TEXT, max_size=3)))
    elif op == "label" and _positions(session):
        target = draw(st.sampled_from(_positions(session)))
        session.append_label(target, draw(st.none() | TEXT))
    elif op == "name":
        session.append_session_info(draw(TEXT))
    elif op == "leaf":
        session.set_leaf(draw(st.none() | st.sampled_from(_positions(session) or [None])))
    elif op == "compaction":
        branch = [e.id for e in session.get_branch()] + ["not-an-entry"]
        session.append_compaction(
            draw(TEXT),
            draw(st.sampled_from(branch)),
            draw(st.integers(0, 10**6)),
            draw(st.none() | JSON_VALUE),
            draw(st.none() | st.booleans()),
        )
    elif op == "branch_summary":
        session.append_branch_summary(draw(TEXT), details=draw(st.none() | JSON_VALUE))
    elif op == "custom":
        session.append_custom(draw(TEXT), draw(JSON_VALUE))
    elif op == "custom_message":
        content = draw(st.one_of(TEXT, st.lists(TEXT.map(lambda t: TextContent(text=t)))))
        session.append_custom_message(draw(TEXT), content, draw(st.booleans()), draw(JSON_VALUE))


def shape(nodes: list[SessionTreeNode]) -> list[Any]:
    return [(n.entry.id, n.label, shape(n.children)) for n in nodes]


def reference_context(lines: list[dict[str, Any]]) -> tuple[list[str], str, Any]:
    """pi's leaf replay and buildSessionContext, on raw JSON dicts: (roles, thinking, model)."""
    by_id = {e["id"]: e for e in lines}
    leaf = None
    for e in lines:
        leaf = e["targetId"] if e["type"] == "leaf" else e["id"]
    path: list[dict[str, Any]] = []
    current = by_id.get(leaf) if leaf is not None else None
    while current is not None:
        path.insert(0, current)
        current = by_id.get(current["parentId"]) if current["parentId"] else None
    thinking, model, compaction = "off", None, None
    for e in path:
        if e["type"] == "thinking_level_change":
            thinking = e["thinkingLevel"]
        elif e["type"] == "model_change":
            model = {"provider": e["provider"], "modelId": e["modelId"]}
        elif e["type"] == "message" and e["message"]["role"] == "assistant":
            model = {"provider": e["message"]["provider"], "modelId": e["message"]["model"]}
        elif e["type"] == "compaction":
            compaction = e

    def role(e: dict[str, Any]) -> list[str]:
        if e["type"] == "message":
            return [e["message"]["role"]]
        if e["type"] == "custom_message":
            return ["custom"]
        if e["type"] == "branch_summary" and e["summary"]:
            return ["branchSummary"]
        return []

    roles: list[str] = []
    if compaction is None:
        for e in path:
            roles += role(e)
    else:
        roles.append("compactionSummary")
        at = path.index(compaction)
        found = False
        for e in path[:at]:
            found = found or e["id"] == compaction["firstKeptEntryId"]
            if found:
                roles += role(e)
        for e in path[at + 1 :]:
            roles += role(e)
    return roles, thinking, model


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), ops=st.lists(st.sampled_from(OPS), max_size=30))
def test_random_sessions_round_trip_through_the_file(data: st.DataObject, ops: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        memory = InMemorySessionStorage()
        live = Session.create(TeeStorage(JsonlSessionStorage(path), memory), cwd="/p")
        for op in ops:
            apply(live, data, op)
        # a move is not written (as in pi 1.6): a reopened file resumes at its last entry
        entries = live.get_entries()
        live.set_leaf(entries[-1].id if entries else None)

        from_file, from_memory = Session.open(path), Session.open(memory)
        expected_context = live.build_context()
        for session in (from_file, from_memory):
            assert session.header == live.header
            assert session.get_entries() == live.get_entries()
            assert session.leaf_id == live.leaf_id and session.name == live.name
            assert shape(session.get_tree()) == shape(live.get_tree())
            assert session.build_context() == expected_context

        text = path.read_text(encoding="utf-8")
        raw = [json.loads(line) for line in text.split("\n")[:-1]]  # not splitlines: U+2028
        roles, thinking, model = reference_context(raw[1:])
        assert [m.role for m in expected_context.messages] == roles
        assert expected_context.thinking_level == thinking
        got = expected_context.model
        assert (None if got is None else got.to_json_dict()) == model
