""" "Run All" in real kernels (nbclient): magics queued behind a streaming ``%%agent`` act as if
the cells above had finished, and their output lands in their own cell of the executed
notebook; ``%model X`` is in effect for the rest of its cell; ``--record`` refuses a path it
cannot write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "test.ipynb"}


def faux(tps: float | None, *replies: str) -> str:
    return FAUX_SETUP.format(tps=tps) + f"faux.set_responses([{', '.join(replies)}])"


def entries(directory: Path) -> list[dict[str, Any]]:
    path = directory / "test.pi.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()][1:]


def by_text(lines: list[dict[str, Any]], role: str) -> dict[str, dict[str, Any]]:
    out = {}
    for entry in lines:
        message = entry.get("message", {})
        if entry["type"] == "message" and message.get("role") == role:
            content = message["content"]
            out[content if isinstance(content, str) else content[0]["text"]] = entry
    return out


def test_label_and_fork_after_a_streaming_run_act_when_it_has_finished(tmp_path: Path) -> None:
    story = "'word ' * 40"
    nb = execute(
        [
            faux(40, f"faux_assistant_message({story})", "faux_assistant_message('again')"),
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent\nTell a long story",  # returns at once, streams for a second
            "%label story",
            "%fork story",
            "%%agent --wait\nand then?",
        ],
        tmp_path,
        env=ENV,
    )
    lines = entries(tmp_path)
    reply = by_text(lines, "assistant")["word " * 40]
    labels = [e for e in lines if e["type"] == "label"]
    assert [(e["targetId"], e["label"]) for e in labels] == [(reply["id"], "story")]
    assert by_text(lines, "user")["and then?"]["parentId"] == reply["id"]
    assert outputs_text(nb.cells[3]) == f"Labelled {reply['id']} as 'story'."
    assert outputs_text(nb.cells[4]).startswith(f"Moved to {reply['id']}.")


def test_queued_magics_show_their_outcome_and_failures_in_their_cell(tmp_path: Path) -> None:
    other = "\nregister_faux_provider(provider='other')"
    nb = execute(
        [
            faux(40, "faux_assistant_message('word ' * 30)", "faux_assistant_message('summary')")
            + other,
            "%load_ext pi_notebook\n%model faux/faux-1",
            "%%agent\nTalk a while",
            "%fork nowhere",
            "%compact",
            "%model other/faux-1",
            "%label talk",
            "import pi_notebook\n"
            "agent = pi_notebook.current()\n"
            "await agent.wait()\n"
            "assert agent.harness.model.provider == 'other'",
        ],
        tmp_path,
        env=ENV,
    )
    fork, compact, model, label = (outputs_text(nb.cells[i]) for i in (3, 4, 5, 6))
    assert fork == "%fork failed: No entry or label 'nowhere' in the session (see %tree).", fork
    assert compact.startswith(("Compacted:", "%compact failed: ")), compact
    assert "queued" not in compact and "Traceback" not in compact
    assert model == "Model: other/faux-1"
    assert label.startswith("Labelled "), label


def test_model_is_in_effect_for_the_rest_of_its_cell(tmp_path: Path) -> None:
    nb = execute(
        [
            faux(None),
            "%load_ext pi_notebook",
            "%model faux/faux-1\n"
            "import pi_notebook\n"
            "model = pi_notebook.current().harness.model\n"
            "print('harness:', model.provider, model.id)",
        ],
        tmp_path,
        env=ENV,
    )
    text = outputs_text(nb.cells[2])
    assert text == "Model: faux/faux-1\nharness: faux faux-1\n", text


def test_record_refuses_a_path_it_cannot_write(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "c.jsonl"
    nb = execute(
        [
            faux(None),
            "%load_ext pi_notebook",
            f"%model --record {missing}",
            f"%model --record {tmp_path}",
            "%model",
        ],
        tmp_path,
        env=ENV,
        allow_errors=True,
    )
    refused = outputs_text(nb.cells[2]).strip()
    assert (
        refused == f"UsageError: --record {missing}: the directory {missing.parent} does not exist"
    )
    assert outputs_text(nb.cells[3]).startswith(
        f"UsageError: --record {tmp_path}: that is a directory"
    )
    assert "recording" not in outputs_text(nb.cells[4])
    assert not missing.parent.exists()
