"""Spending caps in a real kernel (nbclient): ``%%agent --max-turns`` and ``--max-cost`` with
the faux provider at real prices, and a session token cap (``%budget``) on a local
OpenAI-compatible server without prices (a loopback server on 127.0.0.1). Each run is stopped
before the request that would pass its cap, keeps what it did, says why in the run view and
in the session, and the caps are shown by ``%budget`` and ``%session``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.notebook.kernel_notebook import execute, outputs_text, widget_states

PRICED = """\
import pi_notebook
from pi_notebook.ai import ModelCost, faux_assistant_message, faux_tool_call, register_faux_provider
plain = register_faux_provider()
model = plain.get_model().model_copy(
    update={
        "cost": ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
        "max_tokens": 4096,
    }
)
plain.unregister()
faux = register_faux_provider(models=[model])
turns = [
    faux_assistant_message([faux_tool_call("echo", {"text": f"t{i}"})], stop_reason="toolUse")
    for i in range(40)
]
faux.set_responses([*turns, faux_assistant_message("done")])

@pi_notebook.tool
def echo(text: str) -> str:
    "Echo the text back."
    return "echo " + text * 200
"""

REPORT = """\
agent = pi_notebook.current()
view = agent.last_run.view
print("status:", view.status)
print("notice:", view.notice)
print("budget:", json.dumps(view.header["budget"]))
print("first:", view.transcript_text().splitlines()[0])
entries = agent.session.get_branch()
messages = [e.message for e in entries if getattr(e, "message", None) is not None]
stops = [e.content for e in entries if getattr(e, "custom_type", "") == "pi_notebook.budget_stop"]
print("stops:", json.dumps(stops))
print("replies:", json.dumps([m.stop_reason for m in messages if m.role == "assistant"]))
print("results:", sum(1 for m in messages if m.role == "toolResult"))
print("calls:", faux.call_count if "faux" in globals() else len(server.requests))
"""


def report(text: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in text.strip().splitlines() if ": " in line)


def run(tmp_path: Path, cells: list[str]) -> list[str]:
    nb = execute(
        [
            "import json\n" + cells[0],
            "%load_ext pi_notebook",
            *cells[1:],
            REPORT,
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb", "PI_NOTEBOOK_CONTEXT": "off"},
        timeout=120,
    )
    texts = [outputs_text(cell) for cell in nb.cells]
    assert "Traceback" not in "".join(texts), texts
    run.nb = nb  # type: ignore[attr-defined]
    return texts


def test_max_turns_stops_the_run_and_keeps_its_work(tmp_path: Path) -> None:
    texts = run(tmp_path, [PRICED, "%model faux/faux-1", "%%agent --wait --max-turns 3\nGo."])
    out = report(texts[-1])
    assert out["status"] == "aborted"
    assert out["calls"] == "3"  # the fourth request was never sent
    assert json.loads(out["replies"]) == ["toolUse", "toolUse", "toolUse", "aborted"]
    assert out["results"] == "3"  # partial work kept
    stops = json.loads(out["stops"])
    assert len(stops) == 1 and "this run's cap of 3 turns reached" in stops[0]
    assert out["notice"] == stops[0]
    budget = json.loads(out["budget"])
    assert {"scope": "run", "kind": "turns", "spent": 3, "cap": 3} in budget
    assert "budget run 3/3 turns" in out["first"]
    # the executed notebook keeps the header with the meters (what the page shows)
    headers = [
        m["state"]["header"]
        for m in widget_states(run.nb).values()  # type: ignore[attr-defined]
        if "header" in m.get("state", {})
    ]
    assert any(h.get("budget") for h in headers)


def test_max_cost_stops_before_passing_the_cap(tmp_path: Path) -> None:
    texts = run(
        tmp_path,
        [
            PRICED,
            "%model faux/faux-1",
            "%%agent --wait --max-cost 0.03\nGo.",
            "branch = pi_notebook.current().session.get_branch()\n"
            "print(sum(e.message.usage.cost.total for e in branch"
            " if getattr(e, 'message', None) is not None and e.message.role == 'assistant'))",
        ],
    )
    out = report(texts[-1])
    assert out["status"] == "aborted"
    stops = json.loads(out["stops"])
    assert len(stops) == 1 and "this run's cap of $0.0300 would be passed" in stops[0]
    spent = float(texts[-2])
    assert 0 < spent <= 0.03
    assert int(out["calls"]) >= 2


LOCAL = """\
import pi_notebook
from pi_notebook.ai import Model
from tests.loopback import LoopbackServer, Reply, sse_chunks
server = LoopbackServer()
await server.__aenter__()

def turn(i):
    call = {"index": 0, "id": f"call_{i}", "type": "function",
            "function": {"name": "echo", "arguments": json.dumps({"text": f"t{i}"})}}
    usage = {"prompt_tokens": 3000, "completion_tokens": 40, "total_tokens": 3040}
    return Reply.sse(sse_chunks([
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "c", "choices": [], "usage": usage},
    ], done=True))

for i in range(10):
    server.add(turn(i))
model = Model(id="local-gguf", api="openai-completions", provider="custom",
              base_url=server.url + "/v1", max_tokens=4096)
assert model.cost.input == 0 and model.cost.output == 0  # no prices

@pi_notebook.tool
def echo(text: str) -> str:
    "Echo the text back."
    return "echo " + text
"""


def test_session_token_cap_works_without_prices(tmp_path: Path) -> None:
    texts = run(
        tmp_path,
        [
            LOCAL,
            "%budget --max-tokens 10000 --max-cost 0.01\n%budget --run --max-turns 50",
            "agent = pi_notebook.current()\nawait agent.ensure_harness(model)",
            "%%agent --wait\nGo.",
            "%session",
            "%budget",
            "await server.__aexit__(None, None, None)",
        ],
    )
    assert "session caps: cost $0.0100, 10,000 tokens" in texts[2]
    assert "run caps (every %%agent): 50 turns" in texts[2]
    out = report(texts[-1])
    assert out["status"] == "aborted"
    stops = json.loads(out["stops"])
    assert len(stops) == 1 and "the session's cap of 10,000 tokens would be passed" in stops[0]
    assert json.loads(out["replies"]) == ["toolUse", "toolUse", "aborted"]
    assert out["calls"] == "2"
    session_text = texts[-4]
    assert "session caps: cost $0.0100, 10,000 tokens" in session_text
    assert "session spent: $0.0000, 6,080 tokens" in texts[-3]


def test_bad_caps_are_one_usage_error_each(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            "%budget --max-cost abc",
            "%budget clear --max-turns 3",
            "%%agent --max-turns 0\nHi",
            "%budget --run --max-turns 4 --max-cost none\n%budget",
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb"},
        allow_errors=True,
    )
    texts = [outputs_text(cell) for cell in nb.cells]
    assert all("Traceback" not in text for text in texts), texts
    assert "UsageError" in texts[1] and "'abc' is not a number (or none)" in texts[1]
    assert "UsageError" in texts[2] and "takes no caps" in texts[2]
    assert "UsageError" in texts[3] and "a cap must be more than 0" in texts[3]
    assert "run caps (every %%agent): 4 turns" in texts[4]
    assert "session caps: none" in texts[4]
