"""``%fork TARGET --restore`` in real kernels (nbclient) with a scripted model on a loopback
server (real HTTP on 127.0.0.1): a DataFrame and a fitted scikit-learn model restored across
branches, a variable removed, an open file (which cannot be pickled) listed with the cell that
made it and re-created by running that cell again, a damaged checkpoint refused with the kernel
left as it was, and the model's next request carrying what the restore did.

Nobody can click in nbclient: a cell answers the card through the widget's own message handler,
as the front end's Allow does (the browser test clicks the real button)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .kernel_notebook import execute, outputs_text
from .test_workspace_images import ThreadedServer, model_cell, sent_text, text_reply

pytest.importorskip("sklearn")
pytest.importorskip("pandas")

ENV = {"JPY_SESSION_NAME": "test.ipynb", "LAB_API_KEY": "not-a-secret"}

DATA = """\
import pandas as pd
from sklearn.linear_model import LinearRegression
df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [2.0, 4.1, 5.9, 8.2]})
model = LinearRegression().fit(df[["x"]], df["y"])
first_coef = float(model.coef_[0])
log = open("run.log", "w")"""

CHANGE = """\
df = df * 10
model = LinearRegression().fit(df[["x"]], df["y"] * 3)
extra = 42
log.close()
log = open("other.log", "w")"""

ANSWER = """\
import pi_notebook
from pi_notebook.notebook.widgets.restore_view import shown_cards
card = shown_cards()[-1]
await card.decide(allow=%s)  # what the card's Allow (or Deny) button does
await pi_notebook.current().wait()
shown = card.card  # the decided card keeps what it listed
print(card.card["state"])"""


def two_branches(url: str) -> list[str]:
    """The cells up to the second turn: a table, a model and an open file at the first turn,
    all changed (and a variable added) before the second."""
    return [
        "%load_ext pi_notebook",
        model_cell(url, image=False),
        "%model lab/vision",
        DATA,
        "%%agent --wait\nFit a line.",
        CHANGE,
        "%%agent --wait\nNow scale it.",
    ]


def _session(directory: Path) -> list[dict[str, Any]]:
    path = directory / "test.pi.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_restore_across_branches_brings_back_the_table_and_the_model(tmp_path: Path) -> None:
    with ThreadedServer() as server:
        server.add(text_reply("Fitted."), text_reply("Scaled."), text_reply("All restored."))
        nb = execute(
            [
                *two_branches(server.url),
                "%fork -2 --restore",
                ANSWER % "True",
                # the card listed every change, and the kernel is as it was at the first turn
                "changes = {v['name']: v['change'] for v in shown['variables']}\n"
                "assert {k: v for k, v in changes.items() if v != 'kept'} == {\n"
                "    'df': 'restored', 'model': 'restored', 'extra': 'removed',\n"
                "    'log': 'unrestorable'}, changes\n"
                "assert changes['first_coef'] == 'kept', changes\n"
                "assert [c['names'] for c in shown['cells']] == [['log']], shown['cells']\n"
                "assert 'open(\"run.log\", \"w\")' in shown['cells'][0]['source']\n"
                "assert card.card['state'] == 'done', card.card\n"
                "assert df['y'].tolist() == [2.0, 4.1, 5.9, 8.2], df\n"
                "assert float(model.coef_[0]) == first_coef\n"
                "assert 'extra' not in globals()\n"
                "assert log.name == 'run.log' and not log.closed",
                "%%agent --wait\nWhat is in the kernel now?",
            ],
            tmp_path,
            env=ENV,
            timeout=180,
        )
        bodies = [r.json() for r in server.requests]
    assert "done" in outputs_text(nb.cells[8])
    assert "All restored." in outputs_text(nb.cells[10])
    # the model's request after the restore: the first branch only, and what the restore did
    messages = bodies[2]["messages"]
    texts = [sent_text(m) for m in messages]
    assert not any("Now scale it." in t for t in texts)
    restore = next(t for t in texts if "The user restored the notebook" in t)
    assert "df (pandas.DataFrame), model (sklearn.linear_model._base.LinearRegression)" in restore
    assert "removed (they did not exist there): extra" in restore
    assert "Ran the cell that made log again" in restore
    # the tree shows the restore as an entry below the node moved to
    lines = _session(tmp_path)
    entry = next(e for e in lines if e.get("customType") == "pi_notebook.restore")
    assert entry["type"] == "custom_message" and entry["display"] is True
    first = next(
        e
        for e in lines
        if e["type"] == "message"
        and e["message"].get("content")
        and "Fit a line." in json.dumps(e["message"]["content"])
    )
    assert entry["parentId"] == first["parentId"]
    assert entry["details"]["restored"] == ["df", "model"]


def test_a_damaged_checkpoint_is_refused_and_the_kernel_left_as_it_was(tmp_path: Path) -> None:
    with ThreadedServer() as server:
        server.add(text_reply("Fitted."), text_reply("Scaled."))
        nb = execute(
            [
                *two_branches(server.url),
                # damage the first checkpoint: the object holding the table as it was then
                "import pi_notebook\n"
                "checkpoints = pi_notebook.current().checkpoints\n"
                "await checkpoints.settled()\n"
                "first = checkpoints.store.manifests()[0]\n"
                "checkpoints.store.object_path(first.values['df'].hash).write_bytes(b'damaged')",
                "%fork -2 --restore",
                ANSWER % "True",
                "assert card.card['state'] == 'refused', card.card\n"
                "assert 'damaged' in card.card['refusal'] or 'damaged' in card.card['result']\n"
                "assert card.card['variables'] == []\n"
                "assert df['y'].tolist() == [20.0, 41.0, 59.0, 82.0], df\n"
                "assert extra == 42 and log.name == 'other.log'",
            ],
            tmp_path,
            env=ENV,
            timeout=180,
        )
    assert "refused" in outputs_text(nb.cells[9])
    assert "damaged" in outputs_text(nb.cells[8])  # the card's text fallback says why
    assert not any(e.get("customType") == "pi_notebook.restore" for e in _session(tmp_path))


def test_deny_moves_the_conversation_and_leaves_the_kernel_as_it_was(tmp_path: Path) -> None:
    with ThreadedServer() as server:
        server.add(text_reply("Fitted."), text_reply("Scaled."))
        nb = execute(
            [
                *two_branches(server.url),
                "%fork -2 --restore",
                ANSWER % "False",
                "assert card.card['state'] == 'denied', card.card\n"
                "assert df['y'].tolist() == [20.0, 41.0, 59.0, 82.0], df\n"
                "assert extra == 42 and log.name == 'other.log' and not log.closed\n"
                "roles = [m.role for m in pi_notebook.current().session.build_context().messages]\n"
                "assert 'assistant' not in roles, roles  # moved back before the first turn",
            ],
            tmp_path,
            env=ENV,
            timeout=180,
        )
    assert "denied" in outputs_text(nb.cells[8])
    assert not any(e.get("customType") == "pi_notebook.restore" for e in _session(tmp_path))
