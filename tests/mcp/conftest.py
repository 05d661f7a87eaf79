"""Fixtures: the demo server (tests/mcp/demo_server.py) over stdio and Streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_notebook.mcp import McpServerConfig

DEMO = Path(__file__).with_name("demo_server.py")
SECRET = "s3cret-token-value"


@pytest.fixture
def http_url() -> Iterator[str]:
    """The demo server on Streamable HTTP, 127.0.0.1, in its own process."""
    process = subprocess.Popen(
        [sys.executable, str(DEMO), "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("PORT "), line
    try:
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


def stdio_config(name: str = "demo", **options: object) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {
            "name": name,
            "command": sys.executable,
            "args": [str(DEMO), "stdio"],
            "env": {"SECRET": "${DEMO_SECRET}"},
            **options,
        }
    )


def http_config(url: str, name: str = "demo", **options: object) -> McpServerConfig:
    return McpServerConfig.model_validate(
        {"name": name, "url": url, "headers": {"X-Secret": "${DEMO_SECRET}"}, **options}
    )


@pytest.fixture(params=["stdio", "http"])
def demo_config(request: pytest.FixtureRequest) -> McpServerConfig:
    if request.param == "stdio":
        return stdio_config()
    return http_config(request.getfixturevalue("http_url"))
