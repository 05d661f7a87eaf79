"""Labels of white space, read and written as the real pi 1.6 does (``labels.mjs`` in
``tests/golden/pi-1.6/sessions``): ``SessionManager.appendLabelChange`` writes ``"   "`` as
given, and ``"   "`` is a label when pi reads it back (a JavaScript string of spaces is
truthy); only pi's label input box trims what the user typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.harness import Session
from tests.harness.pi16_live import run_pi
from tests.harness.test_session_tree import _walk, assistant, user


def _ours(path: Path) -> Session:
    session = Session.create(path)
    first = session.append_message(user("hi"))
    reply = session.append_message(assistant("hello"))
    session.append_label(first.id, "   ")
    session.append_label(reply.id, "answer")
    session.append_label(reply.id, "")  # cleared
    return session


def _labels(session: Session) -> dict[str, dict[str, str]]:
    tree = {n.entry.id: n.label for n in _walk(session.get_tree()) if n.label is not None}
    return {"labels": dict(session.labels), "tree": tree}


def test_a_label_of_white_space_is_written_and_kept(tmp_path: Path) -> None:
    session = _ours(tmp_path / "ours.jsonl")
    first = session.get_entries()[0].id
    assert session.labels == {first: "   "}
    lines = [json.loads(line) for line in (tmp_path / "ours.jsonl").read_text().splitlines()]
    assert [e["label"] for e in lines if e["type"] == "label"] == ["   ", "answer", ""]
    assert _labels(Session.open(tmp_path / "ours.jsonl")) == _labels(session)


@pytest.mark.pi_node
def test_pi_and_we_read_white_space_labels_alike(tmp_path: Path) -> None:
    ours = tmp_path / "ours.jsonl"
    _ours(ours)
    pi = run_pi("labels.mjs", tmp_path, ours)
    theirs = tmp_path / "pi-labels.jsonl"
    assert list(pi[str(theirs)]["labels"].values()) == ["   "]  # pi keeps its own "   "
    assert _labels(Session.open(theirs)) == pi[str(theirs)]
    assert _labels(Session.open(ours)) == pi[str(ours)]
