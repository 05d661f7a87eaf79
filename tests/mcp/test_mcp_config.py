"""pi's ``mcp.json`` shape, ``${VAR}`` expansion, names, and secrets in messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.mcp import (
    McpConfigError,
    McpServerConfig,
    McpServers,
    config_paths,
    load_mcp_config,
    mcp_tool_name,
    parse_mcp_json,
)
from pi_notebook.mcp.config import expand, redact_url


def test_parse_pi_mcp_json() -> None:
    servers = parse_mcp_json(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-fs"], "env": {"K": "${K}"}},
                "web": {
                    "url": "https://example.com/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN}"},
                    "timeout": 5000,
                    "enabled": False,
                    "requireApproval": True,
                    "exposure": "direct",  # pi's other keys are accepted and ignored
                },
            }
        },
        "mcp.json",
    )
    fs, web = servers
    assert (fs.transport, fs.command, fs.args, fs.env) == (
        "stdio",
        "npx",
        ["-y", "server-fs"],
        {"K": "${K}"},
    )
    assert (web.transport, web.timeout_seconds, web.enabled, web.require_approval) == (
        "http",
        5.0,
        False,
        True,
    )
    assert web.describe() == "https://example.com/mcp (headers: Authorization)"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({}, "needs either a command or a url"),
        ({"command": "x", "url": "http://y"}, "needs either a command or a url"),
        ({"url": "ftp://y"}, "must start with http:// or https://"),
        ({"command": "x", "timeout": -1}, "timeout"),
        ("not an object", "must be an object"),
    ],
)
def test_bad_entries_name_the_server(entry: object, message: str) -> None:
    with pytest.raises(McpConfigError, match=message) as info:
        parse_mcp_json({"mcpServers": {"broken": entry}}, "/x/mcp.json")
    assert "/x/mcp.json" in str(info.value) and "broken" in str(info.value)


def test_files_later_override_and_broken_files_are_reported(tmp_path: Path) -> None:
    user, project = tmp_path / "user.json", tmp_path / "project.json"
    user.write_text(json.dumps({"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}))
    project.write_text(json.dumps({"mcpServers": {"a": {"command": "two"}}}))
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    servers, problems = load_mcp_config([user, project, broken, tmp_path / "missing.json"])
    assert {s.name: s.command for s in servers} == {"a": "two", "b": "b"}
    assert len(problems) == 1 and str(broken) in problems[0]


def test_config_paths(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert config_paths(tmp_path / "nb") == [
        tmp_path / "agent" / "mcp.json",
        tmp_path / "nb" / ".pi" / "mcp.json",
        tmp_path / "nb" / "mcp.json",
    ]
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert config_paths()[0] == Path.home() / ".pi" / "agent" / "mcp.json"


def test_expand() -> None:
    env = {"A": "1"}
    assert expand("x${A}y${B:-two}", env) == "x1ytwo"
    with pytest.raises(McpConfigError, match="MISSING is not set"):
        expand("${MISSING}", env)


def test_redact_url() -> None:
    assert redact_url("failed: http://me:hunter2@host:8/mcp") == "failed: http://me:***@host:8/mcp"
    assert redact_url("http://host/a:b@c") == "http://host/a:b@c"


def test_names() -> None:
    assert mcp_tool_name("my server", "get/time") == "mcp__my_server__get_time"
    long = mcp_tool_name("s" * 40, "t" * 40)
    assert len(long) == 64 and long.startswith("mcp__sss")
    assert long == mcp_tool_name("s" * 40, "t" * 40)  # stable
    taken = {"mcp__a__b"}
    other = mcp_tool_name("a", "b", taken)
    assert other != "mcp__a__b" and other.startswith("mcp__a__b_")


async def test_url_password_stays_out_of_errors() -> None:
    config = McpServerConfig(name="pw", url="http://user:${PW}@127.0.0.1:9/mcp")
    async with McpServers([config], environ={"PW": "hunter2-secret"}) as servers:
        failures = await servers.start()
        assert "could not connect to pw" in failures["pw"]
        assert "hunter2-secret" not in failures["pw"]
        assert "hunter2-secret" not in (servers.get("pw").error or "")
        assert "hunter2-secret" not in config.describe()


def test_repr_shows_no_values_that_may_be_secrets() -> None:
    config = McpServerConfig(
        name="s", url="http://u:pw-literal@h/mcp", headers={"Authorization": "Bearer literal-tok"}
    )
    assert "literal" not in repr(config) and "pw-literal" not in config.describe()
