"""A stalled model request in a real kernel (nbclient): a loopback server on 127.0.0.1 — run on
the kernel's own event loop — sends the headers and one event, then nothing. The run view says
"waiting for the model — N s" from the LLM layer's stall signal (``StreamOptions.on_stall``),
and the run ends with a timeout error that says how long the server was silent."""

from __future__ import annotations

import re
from pathlib import Path

from tests.notebook.kernel_notebook import execute, outputs_text

SERVER = """\
import asyncio, pi_notebook
from pi_notebook.ai import Model
from pi_notebook.harness import HarnessStreamOptions
from tests.loopback import LoopbackServer, Reply, sse_chunks
server = LoopbackServer()
await server.__aenter__()
first = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": None}]}
server.add(Reply.sse(sse_chunks([first]), hang=True))
model = Model(id="m", api="openai-completions", provider="custom", base_url=server.url + "/v1")
agent = pi_notebook.current()
harness = await agent.ensure_harness(model)
harness.stream_options = HarnessStreamOptions(timeout_ms=4000, max_retries=0)
agent.stall_ms = 300
"""


def test_a_stalled_stream_shows_the_wait_and_the_timeout_says_how_long(tmp_path: Path) -> None:
    nb = execute(
        [
            "%load_ext pi_notebook",
            SERVER,
            "%%agent\nSay hello",
            "await asyncio.sleep(2.0)\n"
            "view = agent.last_run.view\n"
            "print('during:', view.stalled_ms, view.transcript_text().splitlines()[0])",
            "await agent.wait()\n"
            "print('after:', view.stalled_ms, view.status)\n"
            "print('error:', view.messages[-1]['error_message'], view.error or '')\n"
            "await server.__aexit__(None, None, None)",
        ],
        tmp_path,
        env={"JPY_SESSION_NAME": "test.ipynb", "PI_NOTEBOOK_CONTEXT": "off"},
    )
    during = outputs_text(nb.cells[3]).strip()
    shape = r"during: (\d+) pi run · waiting for the model — (\d+) s · custom/m · .*"
    match = re.fullmatch(shape, during)
    assert match, during
    assert int(match[1]) >= 1500 and int(match[2]) == int(match[1]) // 1000
    after = outputs_text(nb.cells[4])
    assert after.startswith("after: 0 error\n"), after  # cleared when the request ended
    waited = re.search(r"sent nothing for (\d+\.\d) s \(read timeout\)", after)
    assert waited and float(waited[1]) >= 4.0, after
