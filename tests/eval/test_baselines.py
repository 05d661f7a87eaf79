"""Both baselines against an OpenAI-compatible server on 127.0.0.1 (scripted replies), with
their ``python`` tool running in a real Jupyter kernel, scored through ``run_task``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import custom_model
from pi_notebook.eval import ModelSpec, Task, load_tasks, run_task
from tests.loopback import LoopbackServer, Reply

CODE = "import pandas as pd\nprint(len(pd.read_csv('t.csv')))"


def completion(message: dict[str, Any], finish: str) -> Reply:
    return Reply.json(
        200,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        },
    )


def script() -> list[Reply]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "python", "arguments": json.dumps({"code": CODE})},
    }
    return [
        completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
        completion({"role": "assistant", "content": "There are 3 rows.\n@rows[3]"}, "stop"),
    ]


def rows_task(directory: Path) -> Task:
    """A one-task file over a three-row table in ``directory``."""
    (directory / "t.csv").write_text("a\n1\n2\n3\n")
    row = {
        "id": "rows",
        "question": "How many rows does the table have?",
        "constraints": "Count data rows.",
        "format": "@rows[number]",
        "files": ["t.csv"],
        "level": "easy",
        "answers": "@rows[3]",
    }
    (directory / "tasks.jsonl").write_text(json.dumps(row) + "\n")
    [task] = load_tasks(directory / "tasks.jsonl")
    return task


@contextmanager
def serving(replies: list[Reply]) -> Iterator[LoopbackServer]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = LoopbackServer()
    asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(5)
    server.add(*replies)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.__aexit__(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


@pytest.mark.parametrize("system", ["minimal", "pydantic_ai"])
def test_a_baseline_runs_code_in_a_kernel_and_is_scored(tmp_path: Path, system: str) -> None:
    task = rows_task(tmp_path)
    with serving(script()) as server:
        model = custom_model("m", f"{server.url}/v1", provider="served", max_tokens=256)
        result = run_task(
            system, task, ModelSpec("served/m", model), tmp_path / "out", time_limit=60
        )
        requests = [r.json() for r in server.requests]
    assert result.right, result
    assert (result.turns, result.tool_calls, result.tool_errors) == (2, 1, 0)
    assert (result.tokens_in, result.tokens_out) == (100, 20)
    assert result.code == [CODE] and result.category is None
    first, second = requests
    assert first["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert "How many rows does the table have?" in first["messages"][1]["content"]
    assert [t["function"]["name"] for t in first["tools"]] == ["python"]
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["content"].strip() == "3"
    saved = json.loads(Path(result.transcript).read_text())
    assert saved["steps"][0]["result"].strip() == "3"


def test_pydantic_ai_parallel_calls_share_the_kernel(tmp_path: Path) -> None:
    # two calls in one reply: pydantic-ai runs them in two threads, on one kernel
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": CODE})},
        }
        for i in (1, 2)
    ]
    replies = [
        completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"),
        completion({"role": "assistant", "content": "@rows[3]"}, "stop"),
    ]
    task = rows_task(tmp_path)
    with serving(replies) as server:
        model = custom_model("m", f"{server.url}/v1", provider="served", max_tokens=256)
        spec = ModelSpec("served/m", model)
        result = run_task("pydantic_ai", task, spec, tmp_path / "out", time_limit=60)
    assert result.right and result.error == "", result
    assert (result.tool_calls, result.tool_errors) == (2, 0)
