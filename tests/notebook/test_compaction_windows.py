"""Compaction at 4k, 8k and 32k windows, the notebook's whole path (nbclient, a real kernel, a
scripted model with that window answering every request, the notebook's own system prompt and
tools): each compaction brings the context under the line, so there is no compaction on every
turn; a summary request always fits the summarising model's window; the compaction a run calls
for happens after it, so ``%%agent --wait`` and the cells after it go on while it runs, and the
next run waits for it. Where one compaction cannot make room the run stops and says what to do
(``test_a_compaction_that_cannot_make_room_stops_the_run``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.kernel_notebook import execute, outputs_text

TURNS = 14
SETUP = """\
import asyncio, json
import pi_notebook
from pi_notebook.ai import Model, faux_assistant_message, register_faux_provider
from pi_notebook.harness.prompts import SUMMARIZATION_SYSTEM_PROMPT
W = {window}
model = Model(id="w", name="w", api="x", provider="x", context_window=W,
              max_tokens=min(2048, W // 4))
faux = register_faux_provider(provider="win", models=[model])
seen = []
def size(context):
    text = context.system_prompt or ""
    text += "".join(json.dumps(m.to_json_dict().get("content")) for m in context.messages)
    if context.tools:
        text += json.dumps([t.to_json_dict() for t in context.tools])
    return len(text) // 4
async def step(context, options, state, model):
    if context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT:
        seen.append(["summary", size(context), options.max_tokens])
        await asyncio.sleep({delay})  # a small local model takes its time
        return faux_assistant_message("## Goal\\nAnswer the questions.\\n## Progress\\n"
                                      + "noted " * 60)
    seen.append(["turn", size(context), len(context.tools or [])])
    return faux_assistant_message("An answer. " + "word " * {answer_words})
faux.set_responses([step] * 400)
probes = []
def lookup(key: str) -> str:
    return key
for i in range({tools}):  # more declarations in every request, as a frontend's tools add
    pi_notebook.tool(lookup, name=f"lookup_{{i}}", description="Look a key up. " * 100)
"""
PROBE = (
    "pi = pi_notebook.current()\n"
    "probes.append([pi.busy, sum(e.type == 'compaction' for e in pi.session.get_entries())])"
)
REPORT = """\
pi = pi_notebook.current()
await pi.wait()
h = pi.harness
print(json.dumps({
    "seen": seen,
    "probes": probes,
    "overhead": pi._overhead(h),
    "threshold": W - h.compaction_settings.reserve_tokens,
    "compactions": [e.tokens_before for e in pi.session.get_entries() if e.type == "compaction"],
    "states": [r.state for r in pi.runs],
    "notices": [r.view.notice for r in pi.runs if r.view.notice],
    "errors": [r.view.error for r in pi.runs if r.view.error],
}))
"""


def run_windowed(
    tmp_path: Path,
    window: int,
    turns: int,
    prompt_tokens: int,
    *,
    tools: int = 0,
    after: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``turns`` runs of ``prompt_tokens``-token prompts with a ``window``-token model (and
    ``tools`` extra tool declarations of ~350 tokens each), then the cells ``after``."""
    cells = [
        "%load_ext pi_notebook",
        SETUP.format(window=window, delay=0.5, answer_words=60, tools=tools),
        "%model win/w",
    ]
    filler = "word " * (prompt_tokens * 4 // 5)
    for i in range(turns):
        cells.append(f"%%agent --wait\nQuestion {i}: {filler}")
        cells.append(PROBE)
    cells.extend(after)
    cells.append(REPORT)
    nb = execute(cells, tmp_path, timeout=120, allow_errors=True)
    report: dict[str, Any] = json.loads(outputs_text(nb.cells[-1]))
    return report


@pytest.mark.parametrize(
    ("window", "tools"),
    # 4k with the notebook's own instructions and tools (~400 tokens without a frontend);
    # 8k and 32k with ~2,000 tokens of them, as with a frontend's write tools
    [(4096, 0), (8192, 5), (32768, 5)],
)
def test_compaction_makes_room_fits_its_model_and_waits_for_no_cell(
    tmp_path: Path, window: int, tools: int
) -> None:
    report = run_windowed(tmp_path, window, TURNS, prompt_tokens=window // 12, tools=tools)
    threshold, overhead = report["threshold"], report["overhead"]
    turns = [s for s in report["seen"] if s[0] == "turn"]
    summaries = [s for s in report["seen"] if s[0] == "summary"]
    compactions = report["compactions"]
    assert report["errors"] == [] and report["notices"] == [], report
    assert report["states"] == ["done"] * TURNS
    assert compactions, "the conversation never reached the line"
    # a summary request and its reply fit the summarising model's window
    for _kind, request, reply in summaries:
        assert request + reply <= window, (request, reply, window)
    # each compaction made room: the request after it is under the line, and turns go by
    # before the next one (not a compaction on every turn)
    assert len(compactions) <= TURNS // 2, (len(compactions), report)
    sizes = [request for _kind, request, _tools in turns]
    assert all(size < window for size in sizes), sizes
    assert overhead > 200 and turns[0][2] > 0  # instructions and tools in every request
    # the compaction ran after its run: the --wait cell and the next cell went on meanwhile
    busy = [probe for probe in report["probes"] if probe[0]]
    assert busy, report["probes"]
    print(
        f"window {window}: threshold {threshold}, overhead {overhead}, "
        f"{len(compactions)} compactions in {TURNS} turns, request sizes {sizes}"
    )


def test_a_compaction_that_cannot_make_room_stops_the_run(tmp_path: Path) -> None:
    """4k with ~2,700 tokens of instructions and tools: after one compaction the context is
    still over the line. The view says so and what to do, the next runs are refused without a
    request (no compaction on every turn), and %compact --keep 0 makes room again."""
    after = ("%compact --keep 0", "%%agent --wait\nShort question.")
    report = run_windowed(tmp_path, 4096, 6, prompt_tokens=600, tools=6, after=after)
    assert report["overhead"] > 2400
    compactions, states = report["compactions"], report["states"]
    assert len(compactions) == 2, report  # the automatic one, then %compact --keep 0
    stopped = [n for n in report["notices"] if "compacting again would not make room" in n]
    assert len(stopped) == 1, report["notices"]
    assert "%compact --keep 0" in stopped[0] and "%session new" in stopped[0]
    refused = [e for e in report["errors"] if "compacting again would not make room" in e]
    assert refused and len(refused) == states.count("error"), report
    first_refused = states.index("error")
    assert states[:first_refused] == ["done"] * first_refused
    assert states[-1] == "done"  # room again after %compact --keep 0
    summaries = [i for i, s in enumerate(report["seen"]) if s[0] == "summary"]
    turns_after = [s for s in report["seen"][summaries[0] :] if s[0] == "turn"]
    assert len(turns_after) == 1  # refused runs sent nothing; the last one did


MID_RUN = """\
import json
import pi_notebook
from pi_notebook.ai import Model, faux_assistant_message, faux_tool_call, register_faux_provider
from pi_notebook.harness.prompts import SUMMARIZATION_SYSTEM_PROMPT
model = Model(id="w", name="w", api="x", provider="x", context_window=4096, max_tokens=1024)
faux = register_faux_provider(provider="win", models=[model])
seen = []
def step(context, options, state, model):
    if context.system_prompt == SUMMARIZATION_SYSTEM_PROMPT:
        seen.append("summary")
        return faux_assistant_message("## Goal\\nRead the pages.\\n## Progress\\n" + "noted " * 40)
    seen.append("turn")
    return faux_assistant_message([faux_tool_call("page", {"n": len(seen)})])
faux.set_responses([step] * 20)
def page(n: int) -> str:
    return f"page {n}: " + "text " * 1200
pi_notebook.tool(page, description="A page of the report.")
def lookup(key: str) -> str:
    return key
for i in range(5):
    pi_notebook.tool(lookup, name=f"lookup_{i}", description="Look a key up. " * 100)
"""


def test_a_run_whose_compaction_cannot_make_room_stops_mid_run(tmp_path: Path) -> None:
    """The compaction before the next request of a running turn: still over the line after
    it, the run stops there (no request over the line, no second compaction)."""
    report_cell = (
        "pi = pi_notebook.current()\n"
        "print(json.dumps({'seen': seen, 'state': pi.last_run.state, "
        "'notice': pi.last_run.view.notice, 'compactions': sum(e.type == 'compaction' "
        "for e in pi.session.get_entries())}))"
    )
    cells = [
        "%load_ext pi_notebook",
        MID_RUN,
        "%model win/w",
        "%%agent --wait\nRead it.",
        report_cell,
    ]
    nb = execute(cells, tmp_path, timeout=120, allow_errors=True)
    report = json.loads(outputs_text(nb.cells[-1]))
    assert report["compactions"] == 1, report
    # one request, then the compaction's summaries (a split turn's prefix too), and no more
    assert report["seen"][0] == "turn" and report["seen"].count("turn") == 1, report
    assert report["state"] == "aborted"
    assert "compacting again would not make room, so the run stops" in report["notice"]
