"""``build_context`` is a function of a session's entries and a leaf (pi 1.6's
``buildSessionContext``): at every position of pi 1.6's own files and of ours, the function over
the entries, over the session's index and ``Session.build_context`` give the same context."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.harness import Session
from pi_notebook.harness.entries import LeafEntry
from pi_notebook.harness.session_context import SessionContext, build_context
from tests.paths import GOLDEN

PI16 = GOLDEN / "pi-1.6" / "sessions"
FILES = sorted((PI16 / "pi").glob("*.jsonl")) + sorted((PI16 / "ours").glob("*.jsonl"))


def dumped(context: SessionContext) -> object:
    return context.model_dump(mode="json", by_alias=True)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_function_and_the_method_agree_at_every_leaf(path: Path) -> None:
    session = Session.open(path)
    entries = session.get_entries()
    assert dumped(build_context(entries, session.leaf_id)) == dumped(session.build_context())
    leaves = [e.id for e in entries if not isinstance(e, LeafEntry)] + [None]
    for leaf in leaves:
        session.set_leaf(leaf)
        expected = dumped(session.build_context())
        assert dumped(build_context(session.index, leaf)) == expected, leaf
        assert dumped(build_context(entries, leaf)) == expected, leaf
    assert build_context(entries, None).messages == []


def test_an_unknown_leaf_is_refused() -> None:
    with pytest.raises(ValueError, match="not found"):
        build_context([], "nope")
