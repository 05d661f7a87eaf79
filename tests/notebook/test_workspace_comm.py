"""The workspace comm in a real kernel: the kernel never opens a comm (nbclient has no handler
for one and would log it); the frontend finds the marker in ``comm_info`` and speaks first."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from pi_notebook.notebook.workspace.document import TARGET
from tests.notebook.kernel_notebook import execute, outputs_text


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_nbclient_logs_no_unhandled_comm(tmp_path: Path) -> None:
    records = _Records()
    loggers = [logging.getLogger(name) for name in ("traitlets", "NotebookClient", "")]
    for logger in loggers:
        logger.addHandler(records)
    try:
        nb = execute(["%load_ext pi_notebook", "print(pi_notebook_loaded := 1)"], tmp_path)
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    assert outputs_text(nb.cells[1]).strip() == "1"
    assert not [m for m in records.messages if "comm" in m.lower()], records.messages


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[BlockingKernelClient]:
    manager = KernelManager(kernel_name="python3")
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    manager.start_kernel(cwd=str(tmp_path), env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _run(client: BlockingKernelClient, code: str) -> tuple[str, list[dict[str, Any]]]:
    """Execute ``code``; its printed text and every iopub message it caused."""
    msg_id = client.execute(code)
    seen: list[dict[str, Any]] = []
    text = ""
    while True:
        msg = client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(msg)
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        if msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return text, seen


def _comm_info(client: BlockingKernelClient) -> dict[str, Any]:
    msg_id = client.comm_info(target_name=TARGET)
    reply = client.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:  # execute_replies before it
        reply = client.get_shell_msg(timeout=60)
    comms: dict[str, Any] = reply["content"]["comms"]
    return comms


def test_the_marker_shows_in_comm_info_and_the_frontend_speaks_first(
    kernel: BlockingKernelClient,
) -> None:
    assert _comm_info(kernel) == {}
    _text, messages = _run(kernel, "%load_ext pi_notebook")
    assert not [m for m in messages if m["msg_type"].startswith("comm_")]
    comms = _comm_info(kernel)
    assert [info["target_name"] for info in comms.values()] == [TARGET]

    # what the labextension does once it sees the marker: open its own comm and say hello
    comm_id = uuid.uuid4().hex
    kernel.shell_channel.send(
        kernel.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": {}})
    )
    hello = {"type": "hello", "protocol": 1, "app": "JupyterLab", "version": "4", "path": "x.ipynb"}
    kernel.shell_channel.send(kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": hello}))
    text, _ = _run(
        kernel,
        "import asyncio, pi_notebook\n"
        "for _ in range(100):\n"
        "    if pi_notebook.current().document.connected: break\n"
        "    await asyncio.sleep(0.05)\n"
        "print(pi_notebook.current().document.frontend)",
    )
    assert "JupyterLab" in text and "x.ipynb" in text

    # unloading drops the marker without sending anything toward a frontend
    _text, messages = _run(kernel, "%unload_ext pi_notebook")
    closed = {m["content"]["comm_id"] for m in messages if m["msg_type"] == "comm_close"}
    assert comm_id in closed  # the frontend's link
    assert not closed & set(comms)  # never the marker, which no frontend knows
    assert _comm_info(kernel) == {}
