"""The help the ``%load_ext`` banner names, asked for in a real kernel (jupyter_client: a help
request's text comes back as a pager payload, which nbclient does not keep)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel


def _execute(client: Any, code: str) -> tuple[str, list[dict[str, Any]]]:
    """The cell's stream output and its reply's payloads."""
    msg_id = client.execute(code)
    streams: list[str] = []
    while True:
        msg = client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            streams.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            streams.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while True:
        reply = client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg_id:
            return "".join(streams), reply["content"].get("payload", [])


def test_the_help_the_banner_names_shows_the_magics_usage(tmp_path: Path) -> None:
    env = {**os.environ, "JPY_SESSION_NAME": "test.ipynb", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    manager, client = start_new_kernel(cwd=str(tmp_path), env=env)
    try:
        banner, _ = _execute(client, "%load_ext pi_notebook")
        found = re.search(r"help: (\S+)", banner)
        assert found, banner
        text, payloads = _execute(client, found.group(1))
        assert "not found" not in text, text
        pages = [p["data"]["text/plain"] for p in payloads if p.get("source") == "page"]
        assert pages, (text, payloads)
        assert "Send the cell to the agent as a prompt" in pages[0]
        assert "--wait" in pages[0] and "%model" in pages[0]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
