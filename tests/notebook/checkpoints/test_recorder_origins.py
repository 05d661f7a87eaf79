"""Which cell made a value that cannot be pickled, and which object it was, as a checkpoint
records them (without a kernel): read when the snapshot is taken, not when its write ends,
and with the code the agent ran through ``run_python`` counted as a maker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from pi_notebook.notebook.checkpoints import CaptureReport

from .test_store import make

FIRST = 'log = open("run.log", "w")'
SECOND = 'log.close()\nlog = open("other.log", "w")'


def test_the_maker_is_the_cell_run_before_the_snapshot_not_one_run_while_it_is_written(
    tmp_path: Path,
) -> None:
    log = (tmp_path / "run.log").open("w")
    namespace: dict[str, Any] = {"In": ["", FIRST], "log": log}
    checkpoints, session = make(tmp_path, namespace, use_fork=False)
    session.append_custom("step", {})

    async def scenario() -> CaptureReport | None:
        task = checkpoints.capture_soon("run_start")
        assert task is not None
        # the next cell runs while the checkpoint is still being written
        namespace["In"].append(SECOND)
        namespace["log"].close()
        namespace["log"] = (tmp_path / "other.log").open("w")
        first = await task
        await checkpoints.settled()
        return first

    first = asyncio.run(scenario())
    namespace["log"].close()
    assert first is not None and first.manifest is not None
    skipped = first.manifest.skipped["log"]
    assert skipped.origin is not None and skipped.origin.source == FIRST
    assert skipped.origin.execution_count == 1


def test_a_new_object_made_by_the_same_code_is_not_the_same_object(tmp_path: Path) -> None:
    """The kernel's identity of each unpicklable object is recorded: rebinding the name to a
    new object by the very same cell source gives another identity."""
    from pi_notebook.notebook.restore.plan import compare

    namespace: dict[str, Any] = {"In": ["", FIRST], "log": (tmp_path / "a.log").open("w")}
    checkpoints, session = make(tmp_path, namespace, use_fork=False)

    async def two() -> tuple[CaptureReport | None, CaptureReport | None]:
        session.append_custom("step", {})
        before = await checkpoints.capture("cell")
        kept = namespace["log"]
        namespace["log"] = (tmp_path / "b.log").open("w")  # same maker, another object
        after = await checkpoints.capture("cell")
        same = await checkpoints.capture("cell")
        kept.close()
        namespace["log"].close()
        await checkpoints.settled()
        assert same is not None and same.manifest is not None and after is not None
        assert after.manifest is not None
        # two snapshots of one object agree on it
        assert same.manifest.skipped["log"].identity == after.manifest.skipped["log"].identity
        return before, after

    before, after = asyncio.run(two())
    assert before is not None and before.manifest is not None
    assert after is not None and after.manifest is not None
    a, b = before.manifest.skipped["log"], after.manifest.skipped["log"]
    assert a.origin == b.origin and a.identity and b.identity and a.identity != b.identity
    changes = {c.name: c.change for c in compare(before.manifest, after.manifest)}
    assert changes["log"] == "unrestorable"


def test_code_the_agent_ran_with_run_python_is_the_maker_of_what_it_bound(
    tmp_path: Path,
) -> None:
    namespace: dict[str, Any] = {"In": ["", FIRST], "log": (tmp_path / "a.log").open("w")}
    checkpoints, session = make(tmp_path, namespace, use_fork=False)
    code = 'log.close()\nlog = open("agent.log", "w")'

    async def agent_runs_code() -> CaptureReport | None:
        session.append_custom("step", {})
        call = ToolCall(id="c1", name="run_python", arguments={"code": code})
        checkpoints.after_message(
            AssistantMessage(api="x", provider="x", model="x", content=[call])
        )
        namespace["log"].close()
        namespace["log"] = (tmp_path / "agent.log").open("w")  # what the tool's code does
        result = ToolResultMessage(
            tool_call_id="c1", tool_name="run_python", content=[TextContent(text="(no output)")]
        )
        checkpoints.after_message(result)  # takes a checkpoint after the tool's result
        await checkpoints.settled()
        return checkpoints.last

    report = asyncio.run(agent_runs_code())
    namespace["log"].close()
    assert report is not None and report.manifest is not None, report
    origin = report.manifest.skipped["log"].origin
    assert origin is not None and origin.source == code and origin.execution_count is None
