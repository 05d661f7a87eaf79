"""``%mcp`` in real kernels (nbclient): the third-party ``mcp-server-time`` (from PyPI) over stdio,
driven by the scripted faux model; ``%tools`` switching; secrets kept out of the session file,
outputs and widget state; approval; mcp.json next to the notebook; usage errors; unload;
``%abort`` cancelling a call on the server; kernel shutdown ending the server."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text, widget_states

from .conftest import DEMO, SECRET

ENV = {"JPY_SESSION_NAME": "test.ipynb"}
LOAD = "%load_ext pi_notebook\n%model faux/faux-1"


def setup(*responses: str) -> str:
    return FAUX_SETUP.format(tps=None) + f"faux.set_responses([{', '.join(responses)}])"


def call(name: str, args: dict[str, object]) -> str:
    return f"faux_assistant_message([faux_tool_call({name!r}, {args!r})], stop_reason='toolUse')"


TOOL_RESULTS = (
    "import pi_notebook\n"
    "pi = pi_notebook.current()\n"
    "results = [m for m in (getattr(e, 'message', None) for e in pi.session.get_entries())\n"
    "           if m is not None and m.role == 'toolResult']\n"
)


@pytest.mark.skipif(shutil.which("mcp-server-time") is None, reason="pip install mcp-server-time")
def test_mcp_server_time_through_a_notebook(tmp_path: Path) -> None:
    nb = execute(
        [
            setup(
                call(
                    "mcp__time__convert_time",
                    {
                        "source_timezone": "Europe/Berlin",
                        "time": "12:00",
                        "target_timezone": "Asia/Tokyo",
                    },
                ),
                "faux_assistant_message('It is evening in Tokyo.')",
            ),
            LOAD + "\nimport sys; assert 'mcp' not in sys.modules",
            "%mcp add time -- mcp-server-time --local-timezone Europe/Berlin",
            "%mcp list",
            "%%agent --wait\nWhat time is noon in Berlin in Tokyo?",
            "%mcp list",
            "%tools list",
            TOOL_RESULTS + "import json\n"
            "r = results[0]\n"
            "print(r.tool_name, r.is_error, json.loads(r.content[0].text)['target']['timezone'])",
            "%tools remove mcp__time__convert_time\n%tools list",
            "%unload_ext pi_notebook\nimport asyncio\n"
            "await pi._mcp_closing\nprint('after unload:', pi.mcp.get('time').state)",
        ],
        tmp_path,
        env=ENV,
        timeout=120,
    )
    out = [outputs_text(c) for c in nb.cells]
    assert (
        "Added the MCP server time (stdio: mcp-server-time --local-timezone Europe/Berlin)"
        in out[2]
    )
    assert "time [stopped]" in out[3] and "starts: with the next run" in out[3]
    assert "time [ready]" in out[5]
    assert "[on ] mcp__time__get_current_time" in out[5]
    assert "[on ] mcp__time__convert_time (mcp: time)" in out[6]
    assert out[7].strip() == "mcp__time__convert_time False Asia/Tokyo"
    assert "[off] mcp__time__convert_time" in out[8]
    assert "after unload: stopped" in out[9]


def test_secrets_approval_and_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "demo_server.py").write_text(DEMO.read_text())
    digest = __import__("hashlib").sha256(SECRET.encode()).hexdigest()
    nb = execute(
        [
            setup(
                call("mcp__demo__check_secret", {"sha256": digest}),
                "faux_assistant_message('The secret matched.')",
                call("mcp__asks__echo", {"text": "hello"}),
                "faux_assistant_message('Not allowed, then.')",
            ),
            LOAD,
            f"%mcp add demo --env SECRET=${{DEMO_SECRET}} -- {sys.executable} demo_server.py stdio",
            f"%mcp add asks --ask -- {sys.executable} demo_server.py stdio",
            "%%agent --wait\nCheck the secret.",
            "pi_notebook_agent = __import__('pi_notebook').current()\n"
            "pi_notebook_agent.approval_timeout = 0.5",
            "%%agent --wait\nEcho hello.",
            TOOL_RESULTS + "for r in results: print(r.tool_name, r.is_error, r.content[0].text)",
            "%mcp list",
            "%mcp add",
            "%mcp add broken http://x -- cmd",
            "%mcp add demo -- other",
            "%mcp add h ftp://nope",
            "%mcp frobnicate",
            "%mcp remove nosuch",
            "%mcp add h http://127.0.0.1:9/mcp --header NOVALUE",
        ],
        tmp_path,
        env={**ENV, "DEMO_SECRET": SECRET},
        timeout=120,
        allow_errors=True,
    )
    out = [outputs_text(c) for c in nb.cells]
    assert "Added the MCP server demo (stdio:" in out[2] and "(env: SECRET)" in out[2]
    assert "asks before every call" in out[3]
    lines = out[7].strip().splitlines()
    assert lines[0] == "mcp__demo__check_secret False secret matches"
    assert lines[1] == "mcp__asks__echo True Nobody approved mcp__asks__echo within 0 s"
    assert "demo [ready]" in out[8] and "asks [ready]" in out[8]
    for text in out[9:]:
        assert text.startswith("UsageError"), text
        assert "Traceback" not in text
    assert "exists" in out[11]
    assert "http:// or https://" in out[12]
    assert "KEY=VALUE" in out[15]
    # the secret is nowhere: session file, outputs, widget state, the notebook file
    session = (tmp_path / "test.pi.jsonl").read_text()
    assert "secret matches" in session
    assert SECRET not in session
    assert SECRET not in json.dumps(widget_states(nb))
    assert all(SECRET not in text for text in out)
    assert SECRET not in (tmp_path / "test.ipynb").read_text()


def test_mcp_json_next_to_the_notebook(tmp_path: Path) -> None:
    (tmp_path / "demo_server.py").write_text(DEMO.read_text())
    config = {
        "mcpServers": {
            "local": {"command": sys.executable, "args": ["demo_server.py", "stdio"]},
            "off": {"command": "nothing", "enabled": False},
        }
    }
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "mcp.json").write_text("{ not json")
    nb = execute(
        [
            setup(
                call("mcp__local__echo", {"text": "from mcp.json"}),
                "faux_assistant_message('ok')",
            ),
            LOAD,
            "%mcp list",
            "%%agent --wait\nEcho.",
            TOOL_RESULTS + "print(results[0].content[0].text)",
        ],
        tmp_path,
        env={**ENV, "PI_CODING_AGENT_DIR": str(tmp_path / "no-user-config")},
        timeout=120,
    )
    out = [outputs_text(c) for c in nb.cells]
    assert "MCP configuration skipped:" in out[1] and ".pi/mcp.json" in out[1]
    assert "local [stopped]" in out[2] and "off [disabled]" in out[2]
    assert out[4].strip() == "from mcp.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_stop_cancels_the_call_and_kernel_shutdown_ends_the_server(tmp_path: Path) -> None:
    (tmp_path / "demo_server.py").write_text(DEMO.read_text())
    mark, pid_file = tmp_path / "mark", tmp_path / "pid"
    nb = execute(
        [
            setup(call("mcp__demo__hang", {}), "faux_assistant_message('stopped')")
            # loaded now, so that the call reaches the server before the abort below
            + "\nimport pi_notebook.ai.validation",
            LOAD,
            f"%mcp add demo --env DEMO_MARK_FILE={mark} --env DEMO_PID_FILE={pid_file} "
            f"-- {sys.executable} demo_server.py stdio",
            "%%agent\nWait forever.",
            "import asyncio, pathlib\n"
            "pi = __import__('pi_notebook').current()\n"
            "while pi.active_run is None or not pi.active_run.view.running_tools:\n"
            "    await asyncio.sleep(0.05)\n"
            "%abort",
            "await pi.wait()\n"
            f"mark = pathlib.Path({str(mark)!r})\n"
            "for _ in range(200):\n"
            "    if mark.exists(): break\n"
            "    await asyncio.sleep(0.05)\n"
            "print(mark.read_text().strip(), pi.last_run.state)\n"
            "r = [m for m in (getattr(e, 'message', None) for e in pi.session.get_entries())\n"
            "     if m is not None and m.role == 'toolResult'][0]\n"
            "print(r.is_error, r.content[0].text)",
        ],
        tmp_path,
        env=ENV,
        timeout=120,
    )
    out = [outputs_text(c) for c in nb.cells]
    lines = out[5].strip().splitlines()
    assert lines[0].startswith("cancelled ")
    assert lines[1].startswith("True ")
    # execute() shut the kernel down: the stdio server went with it
    pid = int(pid_file.read_text())
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_card_stop_from_the_front_end_stops_one_call(tmp_path: Path) -> None:
    """The run view's ``stop_tool`` comm message, sent by the client as the front end does,
    while a demo-server count reports progress: that call is cancelled on the server, the model
    sees "aborted by the user", the run goes on to its next turn."""
    import nbformat
    from nbclient import NotebookClient

    (tmp_path / "demo_server.py").write_text(DEMO.read_text())
    mark = tmp_path / "mark"
    count = "faux_assistant_message([faux_tool_call('mcp__demo__slow', {'steps': 400, 'delay': 0.05}, id='count')], stop_reason='toolUse')"  # noqa: E501
    sources = [
        setup(count, "faux_assistant_message('The count was stopped.')"),
        LOAD,
        f"%mcp add demo --env DEMO_MARK_FILE={mark} -- {sys.executable} demo_server.py stdio",
        "%%agent\nCount to 400.",
        "import asyncio\n"
        "pi = __import__('pi_notebook').current()\n"
        "while pi.active_run is None or not pi.active_run.view.running_tools.get('count', {})"
        ".get('progress'):\n"
        "    await asyncio.sleep(0.05)\n"
        "print(pi.active_run.view.model_id, pi.active_run.view.controls['stop_tool'])",
        "await pi.wait()\n"
        "import pathlib\n"
        f"mark = pathlib.Path({str(mark)!r})\n"
        "for _ in range(200):\n"
        "    if mark.exists(): break\n"
        "    await asyncio.sleep(0.05)\n"
        "print(mark.read_text().strip())\n"
        + TOOL_RESULTS
        + "for r in results: print(r.tool_call_id, r.is_error, r.content[0].text)\n"
        "print(pi.last_run.state, pi.session.build_context().messages[-1].content[0].text)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    saved = dict(os.environ)
    os.environ.update({"PYDEVD_DISABLE_FILE_VALIDATION": "1", **ENV})
    os.environ.pop("PI_NOTEBOOK_MODEL", None)
    try:
        client = NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        with client.setup_kernel():
            for index in range(5):
                client.execute_cell(nb.cells[index], index)
            model_id, can_stop = outputs_text(nb.cells[4]).split()
            assert can_stop == "True"
            kc = client.kc
            assert kc is not None
            data = {"method": "custom", "content": {"type": "stop_tool", "tool_call_id": "count"}}
            kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": model_id, "data": data}))
            client.execute_cell(nb.cells[5], 5)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    lines = outputs_text(nb.cells[5]).strip().splitlines()
    assert lines[0].startswith("slow cancelled after ")
    assert lines[1] == "count True Tool call aborted by the user"
    assert lines[2] == "done The count was stopped."


def test_every_mcp_usage_error_is_one_line(tmp_path: Path) -> None:
    bad = [
        "%mcp add",
        "%mcp add --ask",
        "%mcp add name",
        "%mcp add name --timeout",
        "%mcp add name --bogus http://x",
        "%mcp add name http://x extra",
        "%mcp add broken http://x -- cmd",
        "%mcp frobnicate",
        "%mcp add 'unclosed",
        "%mcp remove",
    ]
    nb = execute([setup(), LOAD, *bad], tmp_path, env=ENV, allow_errors=True)
    for cell, text in zip(bad, (outputs_text(c) for c in nb.cells[2:]), strict=True):
        assert text.startswith("UsageError: "), (cell, text)
        assert len(text.strip().splitlines()) == 1, (cell, text)
    assert "%mcp add NAME -- COMMAND" in outputs_text(nb.cells[2])
