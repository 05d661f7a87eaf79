"""The tree's view state alone (no widget): reading a real Session, folds, reveal, the bounded
page and its layout number, search matches, and the text lines."""

from __future__ import annotations

from pi_notebook.ai import UserMessage
from pi_notebook.harness import InMemorySessionStorage, Session
from pi_notebook.notebook.widgets.tree_pages import FOLDED, NO, PATH
from pi_notebook.notebook.widgets.tree_state import TreeState
from tests.notebook.test_tree_pages import branched, linear


def read(session: Session, page_rows: int = 300) -> TreeState:
    state = TreeState(page_rows)
    assert state.read(session.index) is True
    state.leaf = session.leaf_id or ""
    return state


def test_reading_a_session_grows_the_layout_and_a_replaced_one_starts_over() -> None:
    session = linear(5)
    state = read(session)
    assert state.layout().total == 5 and state.read(session.index) is False
    session.append_message(UserMessage(content="more", timestamp=0))
    layout = state.layout()
    assert state.read(session.index) is True
    assert state.layout() is layout and layout.total == 6  # a chain grew in place
    other = Session.create(InMemorySessionStorage(), cwd="/q")
    other.append_message(UserMessage(content="new", timestamp=0))
    assert state.read(other.index) is None  # another session: read again from the start
    assert len(state.index) == 1 and state.layout().total == 1


def test_a_big_tree_opens_with_side_branches_folded_and_reveal_unfolds_one() -> None:
    session, line = branched(turns=300, every=50, side=20)
    state = read(session, page_rows=100)
    assert state.fold_big_tree() and len(state.folded) == 6
    assert state.layout().total == 306  # each side branch is one folded row
    side = [e.id for e in session.get_entries() if e.id not in set(line)]
    node = state.index.node(side[-1])
    assert node is not None
    assert state.position(node) is None  # a fold hides it
    assert state.unfold_to(node) and len(state.folded) == 5
    assert state.position(node) is not None
    assert state.layout().total == 325 and not state.unfold_to(node)
    head = state.index.node(side[-20])
    assert head is not None and state.fold(head, True) and state.layout().total == 306


def test_the_page_is_bounded_marks_the_path_and_numbers_its_layouts() -> None:
    session = linear(1000)
    state = read(session, page_rows=100)
    page = state.page()
    assert page["total"] == 1000 and page["layout"] == 1
    rows = [row for _, segment in page["segments"] for row in segment]
    assert len(rows) == 100 and all(row[-2] & PATH for row in rows)
    (start, head), (low, around) = page["segments"]
    # the top rows, and the rows up to the leaf (the last one here)
    assert start == 0 and len(head) == 12 and low + len(around) == 1000
    assert page["leaf_index"] == 999
    assert state.page()["layout"] == 1  # nothing changed: the same number
    state.set_show_meta(True)
    assert state.page()["layout"] == 2 and state.page()["show_meta"] is True
    state.reset()  # another session: numbers keep growing
    assert state.layout_number == 2
    assert not any(row[-2] & FOLDED for row in state.rows(0, 10))


def test_search_matches_shown_entries_and_text_lines_mark_the_leaf() -> None:
    session = linear(30)
    state = read(session)
    while state.search.read(7):
        pass
    matches, total = state.matches("entry 2", 3)
    assert total == 11 and len(matches) == 3  # "entry 2" and "entry 20".."entry 29"
    assert matches[0][1:3] == ["user", "entry 2"]
    lines, leaf = state.text_lines()
    assert len(lines) == 30 and leaf != NO and lines[-1][1] == leaf
