"""A pi 1.6 session file continued by the harness: its system messages reach a real provider over
loopback HTTP as the replayed prompt and tools, and the new turn lands on pi's branch."""

from __future__ import annotations

import shutil
from pathlib import Path

from pi_notebook.ai import Model
from pi_notebook.harness import AgentHarness, Session
from tests.loopback import LoopbackServer, Reply, sse_chunks
from tests.paths import GOLDEN

PI = GOLDEN / "pi-1.6" / "sessions" / "pi"


def _reply(text: str) -> Reply:
    return Reply.sse(
        sse_chunks(
            [
                {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ],
            done=True,
        )
    )


async def test_a_pi_1_6_session_continues_through_a_real_provider(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(PI / "system-messages.jsonl", path)
    session = Session.open(path)
    before = session.build_context()
    async with LoopbackServer() as server:
        server.add(_reply("Sure."))
        model = Model(
            id="m", api="openai-completions", provider="custom", base_url=server.url + "/v1"
        )
        # the transcript carries the prompt; a harness prompt would be folded in before it
        harness = AgentHarness(
            session, model, system_prompt="", get_api_key=lambda provider: "test-key"
        )
        await harness.prompt("One more thing.")
    body = server.requests[0].json()
    system = [m for m in body["messages"] if m["role"] in ("system", "developer")]
    assert len(system) == 1 and system[0]["content"] == before.system_prompt
    assert [t["function"]["name"] for t in body.get("tools", [])] == before.tool_names
    reopened = Session.open(path)
    roles = [m.role for m in reopened.build_context().messages]
    assert roles[-2:] == ["user", "assistant"] and roles.count("system") == 3
    assert reopened.build_context().system_prompt == before.system_prompt
