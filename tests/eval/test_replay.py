"""Three tasks of the project's set through the whole harness — the command line, worker
processes, fresh kernels with nbclient, ``%load_ext pi_notebook``, ``%approve``, the
``%%agent --wait`` cell, the session files, scoring and the report — replaying Qwen2.5-Coder-1.5B's
recorded replies (``tests/eval/cassettes``, recorded with ``--record`` against the real model
served by llama.cpp). ``expected.json`` is what the harness scores on replay.

In ``cars-mpg-hp-fit`` the model runs code that fails; the traceback it gets back names the
absolute path of the package's own source, so the request after it matches the cassette only in
a checkout at the recording's path. Elsewhere that request is answered "no recording matches"
and the run ends there: the test checks that task up to its first code run, which every checkout
replays alike."""

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
        if not want["code"]:
            assert got[task_id] == want
            continue
        # the first code run, allowed by policy, ran in the kernel and failed (a KeyError)
        have = got[task_id]
        assert have["code"][0] == want["code"][0]
        assert have["tool_errors"] >= 1 and have["category"] == want["category"] == "code_error"
        assert have["answers"] == want["answers"] and not have["right"]
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
