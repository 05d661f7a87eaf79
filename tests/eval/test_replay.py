"""Three tasks of the project's set through the whole harness — the command line, worker
processes, fresh kernels with nbclient, ``%load_ext pi_notebook``, ``%approve``, the
``%%agent --wait`` cell, the session files, scoring and the report — replaying Qwen2.5-Coder-1.5B's
recorded replies (``tests/eval/cassettes``, recorded with ``--record`` against the real model
served by llama.cpp). ``expected.json`` is what the harness scores on replay.

The recording ran each task under a time limit, so a run whose model was cut off replays up to
its last recorded reply and ends there ("no recording matches" the next request): the same
place in every checkout, since nothing the model is sent names a path of this machine."""

from __future__ import annotations

import json
from pathlib import Path

from pi_notebook.eval import TASK_SET
from pi_notebook.eval.cli import main

CASSETTES = Path(__file__).parent / "cassettes"
KEYS = ("right", "category", "answers", "turns", "tool_calls", "tool_errors", "code")


def test_three_tasks_replay_through_the_harness(tmp_path: Path) -> None:
    expected = json.loads((CASSETTES / "expected.json").read_text(encoding="utf-8"))
    out = tmp_path / "out"
    code = main(
        [
            str(TASK_SET),
            "--model",
            "local/qwen2.5-coder-1.5b",
            "--systems",
            "pi_notebook",
            "--replay",
            str(CASSETTES),
            "--ids",
            ",".join(expected),
            "--out",
            str(out),
            "--time-limit",
            "120",
        ]
    )
    assert code == 0
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    got = {r["task_id"]: {k: r[k] for k in KEYS} for r in data["results"]}
    assert got.keys() == expected.keys()
    for task_id, want in expected.items():
        assert got[task_id] == want, task_id
    for task_id in expected:
        session = out / "pi_notebook" / task_id / "run" / f"{task_id}.pi.jsonl"
        lines = [json.loads(line) for line in session.read_text().splitlines()]
        policy = [e for e in lines if e.get("customType") == "pi_notebook.approval_policy"]
        assert policy and policy[-1]["data"] == {"rules": {"run_python": "allow"}}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "| accuracy |" in report and "failure: tool_never_called" in report
    assert data["summary"]["pi_notebook"]["tasks"] == len(expected)
    # scoring again from the kept session files gives the same verdicts
    assert main([str(TASK_SET), "--rescore", str(out)]) == 0
    again = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [{k: r[k] for k in KEYS} for r in again["results"]] == [
        {k: r[k] for k in KEYS} for r in data["results"]
    ]
