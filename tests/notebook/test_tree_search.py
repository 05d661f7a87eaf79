"""The tree's search (``tree_search``) and the titles it reads from entry objects
(``tree_rows.entry_title``) agree with the plain versions: ``node_row`` of each entry's JSON,
and a node-by-node match of the query against title, label and id."""

from __future__ import annotations

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    faux_assistant_message,
)
from pi_notebook.harness import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    InMemorySessionStorage,
    Session,
)
from pi_notebook.notebook.widgets.items import message_json
from pi_notebook.notebook.widgets.tree_pages import Shape, TreeIndex
from pi_notebook.notebook.widgets.tree_rows import entry_row, entry_title, node_row
from pi_notebook.notebook.widgets.tree_search import TreeSearch
from pi_notebook.notebook.widgets.tree_view import TreeView


def reply(content: list, stop: str = "stop", error: str | None = None) -> AssistantMessage:
    return AssistantMessage(
        content=content,
        api="faux",
        provider="faux",
        model="faux-1",
        stop_reason=stop,  # type: ignore[arg-type]
        error_message=error,
    )


def every_kind() -> Session:
    """A session with every entry type and message role the tree titles."""
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    tool = Tool(name="read", description="Read a file", parameters={"type": "object"})
    session.append_system_message("You are helpful.\nMore.", sections={"cwd": "/p", "x": None})
    session.append_system_message(tools_added=[tool])
    first = session.append_message(UserMessage(content="  \nFirst line\nsecond", timestamp=0))
    image = ImageContent(data="AAAA", mime_type="image/png")
    session.append_message(UserMessage(content=[image], timestamp=0))
    session.append_message(UserMessage(content=[TextContent(text="Straße ÉTÉ")], timestamp=0))
    call = ToolCall(id="c1", name="read", arguments={"path": "a"})
    for message in (
        reply([TextContent(text="Let me look.")]),
        reply([TextContent(text="Reading"), call]),
        reply([call, ToolCall(id="c2", name="grep", arguments={})]),
        reply([], stop="error", error="rate limited\nretry"),
        reply([], stop="aborted"),
        reply([]),
        faux_assistant_message("x" * 300),
    ):
        session.append_message(message)
    session.append_message(
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="read",
            content=[TextContent(text="\nfile body")],
            is_error=True,
            timestamp=0,
        )
    )
    session.append_message(ToolResultMessage(tool_call_id="c2", tool_name="grep", timestamp=0))
    session.append_message(BashExecutionMessage(command="ls -l\necho", output="x", timestamp=0))
    session.append_message(CustomMessage(custom_type="note", content="hello\nthere", timestamp=0))
    session.append_message(CustomMessage(custom_type="note", content=[image], timestamp=0))
    session.append_custom_message("notebook_changes", "Cells ran: 3", details={"n": 3})
    session.append_custom("state", {"k": 1})
    session.append_label(first.id, "start")
    session.append_session_info("Demo")
    session.append_model_change("faux", "faux-1")
    session.append_thinking_level_change("high")
    session.append_active_tools_change(["read"])
    session.append_usage("cache_warm", "faux", "faux-1", {"input": 5, "output": 1})
    session.append_compaction("Summary of it all", None, 1234)
    session.append_branch_summary("Went elsewhere\nand back")
    session.append_context_edit(first.id, "replaced")
    session.set_leaf(first.id)
    session.append_message(UserMessage(content="side", timestamp=0))
    return session


def test_summary_messages_are_titled_like_their_json() -> None:
    for message in (
        BranchSummaryMessage(summary="away", from_id="root", timestamp=0),
        CompactionSummaryMessage(summary="kept", tokens_before=9, timestamp=0),
    ):
        entry = {"id": "e", "parentId": None, "type": "message", "message": message_json(message)}
        assert node_row(entry)[3].endswith(message.summary)


def test_titles_from_entry_objects_are_those_of_their_json() -> None:
    for entry in every_kind().get_entries():
        expected = node_row(message_json(entry))
        assert entry_row(entry) == expected, entry.type
        assert entry_title(entry) == expected[2:4], entry.type


def reference(view_index: TreeIndex, shape: Shape, query: str) -> list[int]:
    """The search as it was: node by node, the query in the title, the label or the id."""
    needle = query.strip().casefold()
    found = []
    for node in range(view_index.count):
        if shape.anc[node] != node or not needle:
            continue
        row = view_index.row(node)
        label = view_index.labels.get(row[0], "")
        if needle in row[3].casefold() or needle in label.casefold() or needle in row[0].casefold():
            found.append(node)
    return found


QUERIES = [
    "",
    "   ",
    "first",
    "FIRST LINE",
    "strasse",  # casefold: ß is ss
    "été",
    "start",  # a label
    "→ read",
    "no such thing",
    "line\nsecond",  # spans a newline: matched title by title
    "\x1f",
    "s",
]


@pytest.mark.parametrize("query", QUERIES)
def test_search_finds_what_the_node_by_node_search_found(query: str) -> None:
    session = every_kind()
    index = TreeIndex()
    index.update(session.index)
    shape = Shape(index, show_meta=False)
    search = TreeSearch(index)
    assert search.read(5) > 0 and search.read() == 0
    found = search.find(query, lambda node: shape.anc[node] == node)
    assert found == reference(index, shape, query)


def test_an_id_fragment_and_the_growing_session_are_searched() -> None:
    session = every_kind()
    view = TreeView(session)
    some = session.get_entries()[5].id
    matches, total = view.search(some[-6:])
    assert total == 1 and matches[0][0] == some
    session.append_message(UserMessage(content="needle in a new entry", timestamp=0))
    view.refresh()
    matches, total = view.search("needle")
    assert total == 1 and matches[0][2] == "needle in a new entry"
    session.append_label(matches[0][0], "Findable")
    view.refresh()
    assert view.search("findable")[1] == 1
    all_meta = view.search("cache_warm")[1]
    view.show_meta(True)
    assert (all_meta, view.search("cache_warm")[1]) == (0, 1)  # usage entries: bookkeeping
    view.close()
