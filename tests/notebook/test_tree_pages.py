"""The tree's paging: the kernel keeps the shape and folds, the synced page is bounded whatever
the session's size, and rows, folds, search and reveal are requests answered over the comm
(custom messages, never saved). Real Sessions; the comm is recorded by ``Wire``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_notebook.ai import UserMessage, faux_assistant_message
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.harness.session_index import SessionIndex
from pi_notebook.notebook.widgets.tree_pages import (
    BRANCHING,
    FOLDED,
    FORK,
    LAST,
    NO,
    Layout,
    Shape,
    TreeIndex,
    text_lines,
)
from pi_notebook.notebook.widgets.tree_view import FETCH_ROWS, PAGE_ROWS, TreeView
from tests.notebook.test_run_view import Wire, click, settle


def linear(count: int) -> Session:
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    for i in range(count):
        session.append_message(UserMessage(content=f"entry {i}", timestamp=0))
    return session


def branched(turns: int = 600, every: int = 50, side: int = 20) -> tuple[Session, list[str]]:
    """A main line of ``turns`` entries with a side branch of ``side`` entries every ``every``."""
    session = linear(turns)
    line = [e.id for e in session.get_entries()]
    for at in range(every // 2, turns, every):
        session.set_leaf(line[at])
        for i in range(side):
            session.append_message(UserMessage(content=f"side {at}.{i}", timestamp=0))
    session.set_leaf(line[-1])
    return session, line


# --- the model ------------------------------------------------------------------------------------


def test_shape_and_layout_of_a_small_tree() -> None:
    session = Session.create(InMemorySessionStorage(), cwd="/p")
    a = session.append_message(UserMessage(content="a", timestamp=0))
    b = session.append_message(faux_assistant_message("b"))
    session.append_label(b.id, "v1")  # bookkeeping: hidden, its child hangs from b
    c = session.append_message(UserMessage(content="c", timestamp=0))
    session.set_leaf(a.id)
    d = session.append_message(UserMessage(content="d", timestamp=0))
    index = TreeIndex()
    assert index.update(session.index) is True
    assert index.update(session.index) is False
    assert index.labels == {b.id: "v1"} and len(index) == 5  # the leaf move is no node
    shape = Shape(index, show_meta=False)
    node = index.index.get
    assert shape.count == 4 and shape.roots == [node(a.id)]
    assert shape.children(node(a.id)) == [node(b.id), node(d.id)]
    assert shape.parent[node(c.id)] == node(b.id)  # through the hidden label
    layout = Layout(shape)
    rows = [(index.ids[n], depth, bits, hidden) for n, depth, bits, hidden in layout.rows(0, 9)]
    assert rows == [
        (a.id, 0, LAST | BRANCHING, 0),
        (b.id, 1, FORK, 0),
        (c.id, 1, LAST, 0),
        (d.id, 1, FORK | LAST, 0),
    ]
    folded = Layout(shape, {node(b.id), node(d.id)})  # d has no children: not a fold
    assert folded.folded == {node(b.id)} and folded.total == 3
    assert [bits & FOLDED for _, _, bits, _ in folded.rows(0, 3)] == [0, FOLDED, 0]
    assert folded.hidden(node(b.id)) == 1 and folded.position(node(c.id)) is None
    assert folded.position(node(d.id)) == 2
    assert Shape(index, show_meta=True).count == 5
    assert [(prefix, index.ids[n]) for prefix, n in text_lines(shape)] == [
        ("", a.id),
        ("├─ ", b.id),
        ("│  ", c.id),
        ("└─ ", d.id),
    ]
    session.append_message(UserMessage(content="e", timestamp=0))
    assert index.update(session.index) is True and len(index) == 6
    assert TreeIndex().update(SessionIndex([])) is False
    assert index.update(linear(1).index) is None  # another session: start over


def test_a_long_chain_is_one_run_and_any_row_is_a_bisect_away() -> None:
    index = TreeIndex()
    index.update(linear(5000).index)
    layout = Layout(Shape(index, False))
    assert layout.total == 5000 and len(layout.runs) == 1
    assert [n for n, *_ in layout.rows(4321, 4324)] == [4321, 4322, 4323]
    assert layout.position(4999) == 4999 and layout.position(2500) == 2500
    assert [n for n, *_ in layout.rows(4998, 6000)] == [4998, 4999]
    assert list(layout.rows(6000, 6001)) == []


def test_unknown_and_later_parents_make_roots() -> None:
    index = TreeIndex()
    session = linear(2)
    entries = session.get_entries()
    odd = entries[1].model_copy(update={"id": "x", "parent_id": "missing"})
    index.update(SessionIndex([entries[0], odd]))
    assert index.parents == [NO, NO]
    assert Shape(index, False).roots == [0, 1]


# --- the widget's page ----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [20_000, 60_000])
def test_the_synced_page_is_bounded_whatever_the_size(count: int) -> None:
    view = TreeView(linear(count))
    page = view.page
    assert page["total"] == page["entries"] == count and page["leaf_index"] == count - 1
    (head_start, head), (low, near) = page["segments"]
    assert head_start == 0 and len(head) + len(near) == PAGE_ROWS
    assert near[-1][0] == view.leaf_id and low + len(near) == count
    state = json.dumps(view.get_state([n for n in view.keys if n not in ("_esm", "_css")]))
    assert len(state) < 100_000  # ~45 kB, the same for 20k and 60k entries
    assert len(view.tree_text().splitlines()) == 402  # the fallback is bounded too


async def test_rows_are_fetched_by_index_over_the_comm() -> None:
    view = TreeView(linear(20_000))
    wire = Wire(view)
    layout = view.page["layout"]
    click(view, {"type": "rows", "layout": layout, "start": 10_000, "end": 10_100})
    await settle(view)
    (reply,) = wire.custom
    assert reply["type"] == "rows" and reply["layout"] == layout and reply["start"] == 10_000
    assert [row[2] for row in reply["rows"][:2]] == ["entry 10000", "entry 10001"]
    assert len(reply["rows"]) == 100 and wire.updates == []  # nothing stored in the state
    click(view, {"type": "rows", "start": 0, "end": 100_000})
    await settle(view)
    assert len(wire.custom[-1]["rows"]) == FETCH_ROWS
    click(view, {"type": "rows", "start": "x", "end": 2})
    await settle(view)
    assert "malformed rows request" in view.notice


async def test_folds_unfold_and_meta_are_kernel_requests() -> None:
    session, line = branched()
    view = TreeView(session)
    wire = Wire(view)
    assert len(view.folded_ids) == 12  # bigger than a page: side branches open folded
    first = view.page["layout"]
    assert view.page["total"] == 600 + 12
    side_head = view.folded_ids[0]
    at = view.position(side_head)
    assert at is not None
    row = view.display_rows(at, at + 1)[0]
    assert row[0] == side_head and row[9] & FOLDED and row[10] == 19
    click(view, {"type": "fold", "id": side_head, "folded": False})
    await settle(view)
    page = wire.updates[-1]["page"]
    assert page["layout"] > first and page["total"] == 600 + 12 + 19
    assert side_head not in view.folded_ids
    click(view, {"type": "fold", "id": line[0], "folded": True})
    await settle(view)
    assert view.page["total"] == 1
    click(view, {"type": "fold_side"})
    await settle(view)
    assert view.page["total"] == 612
    click(view, {"type": "show_meta", "show": True})
    await settle(view)
    assert view.page["show_meta"] is True
    click(view, {"type": "fold", "id": "nope"})
    await settle(view)
    assert "no entry 'nope'" in view.notice


async def test_search_finds_entries_not_in_the_page_and_reveal_unfolds_to_them() -> None:
    session, _ = branched()
    view = TreeView(session)
    wire = Wire(view)
    in_page = {row[0] for _, rows in view.page["segments"] for row in rows}
    click(view, {"type": "search", "query": "SIDE 275.7"})
    await settle(view, rounds=20)
    found = wire.custom[-1]
    assert found["type"] == "found" and found["query"] == "SIDE 275.7" and found["total"] == 1
    ((target, kind, title, label),) = found["matches"]
    assert (kind, title, label) == ("user", "side 275.7", "") and target not in in_page
    assert view.position(target) is None  # folded away
    click(view, {"type": "reveal", "id": target})
    await settle(view)
    rows, revealed = wire.custom[-2:]
    index = revealed["index"]
    assert revealed == {
        "type": "revealed",
        "layout": view.page["layout"],
        "id": target,
        "index": index,
    }
    assert rows["layout"] == revealed["layout"]  # after the page of the new layout
    assert rows["rows"][index - rows["start"]][0] == target
    assert view.display_rows(index, index + 1)[0][0] == target
    assert view.selected_id == target and view.selected_detail["id"] == target
    matches, total = view.search("entry 1")
    assert total == 111 and len(matches) == 100  # entry 1, 10-19, 100-199


async def test_a_live_session_grows_the_page() -> None:
    session = linear(5000)
    view = TreeView(session)
    wire = Wire(view)
    for i in range(3):
        session.append_message(UserMessage(content=f"live {i}", timestamp=0))
        view.refresh()
        await settle(view)
    page = wire.updates[-1]["page"]
    assert page["total"] == 5003 and page["segments"][-1][1][-1][2] == "live 2"
    assert all(len(json.dumps(update)) < 100_000 for update in wire.updates)


def test_bad_page_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="page_rows"):
        TreeView(linear(1), page_rows=2)


def test_a_live_run_extends_the_layout_in_place_and_it_matches_a_rebuild() -> None:
    session, _ = branched(300, every=50, side=5)
    view = TreeView(session, page_rows=50)
    layout = view._current_layout()
    for i in range(30):  # appended under the leaf, with a label now and then: in place
        session.append_message(UserMessage(content=f"live {i}", timestamp=0))
        if i % 10 == 0:
            session.append_label(session.get_entries()[-1].id, f"l{i}")
        view.refresh()
        view.flush()
        assert view._current_layout() is layout
    grown = view.display_rows()
    assert grown[view.page["leaf_index"]][2] == "live 29"
    assert grown == TreeView(session, page_rows=50).display_rows()  # what a rebuild shows
    session.set_leaf(session.get_entries()[5].id)  # a new branch: rebuilt
    session.append_message(UserMessage(content="elsewhere", timestamp=0))
    view.refresh()
    assert view._current_layout() is not layout
    fresh = TreeView(session, page_rows=50)
    fresh.fold_side_branches()
    view.fold_side_branches()
    assert view.display_rows() == fresh.display_rows()


def reference_parents(entries: list[Any]) -> list[tuple[str, str | None]]:
    """The index as it was read from entry objects: node entries (no leaf moves) in file order,
    each with its tree parent (through leaf moves) when that came earlier."""
    moves = {e.id: e.parent_id for e in entries if e.type == "leaf"}
    seen: set[str] = set()
    out = []
    for entry in entries:
        if entry.type == "leaf":
            continue
        parent = entry.parent_id
        for _ in range(len(moves) + 1):
            if parent not in moves:
                break
            parent = moves[parent]
        out.append((entry.id, parent if parent in seen else None))
        seen.add(entry.id)
    return out


def shape_tables(shape: Shape) -> tuple[Any, ...]:
    return shape.anc, shape.parent, shape.first, shape.many, shape.roots, shape.count


@pytest.mark.parametrize("seed", [4, 5])
def test_the_index_and_shape_grown_live_match_a_fresh_read(seed: int) -> None:
    from tests.harness.test_session_index import grow

    session = Session.create(InMemorySessionStorage(), cwd="/p")
    live = TreeIndex()
    shapes = {False: Shape(live, False), True: Shape(live, True)}
    for step in range(120):
        grow(session, 3, seed * 1000 + step)
        live.update(session.index)
        for shape in shapes.values():
            shape.extend(live)
    fresh = TreeIndex()
    fresh.update(SessionIndex(session.get_entries()))
    rows = [(row[0], row[1]) for row in live.rows()]
    assert rows == [(row[0], row[1]) for row in fresh.rows()]
    assert rows == reference_parents(session.get_entries())
    for meta, shape in shapes.items():
        assert shape_tables(shape) == shape_tables(Shape(fresh, meta))
