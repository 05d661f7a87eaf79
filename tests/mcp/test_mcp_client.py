"""``pi_notebook.mcp`` against a real MCP server (the SDK's own server API), over stdio and
Streamable HTTP on 127.0.0.1: listing, content, errors, progress, timeout, cancellation, list
changes, a crashing server, secrets."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import Agent, AgentToolResult
from pi_notebook.ai import (
    AbortController,
    ImageContent,
    TextContent,
    ToolResultMessage,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.mcp import (
    McpCallError,
    McpServerConfig,
    McpServers,
    McpStartError,
    McpTool,
)

from .conftest import SECRET, http_config, stdio_config

ENV = {"DEMO_SECRET": SECRET, "PATH": "/usr/bin:/bin"}


def by_remote(tools: list[McpTool]) -> dict[str, McpTool]:
    return {t.remote_name: t for t in tools}


async def call(t: McpTool, args: dict[str, Any] | None = None, **kw: Any) -> AgentToolResult:
    updates: list[AgentToolResult] = kw.pop("updates", [])
    return await t.execute("call-1", args or {}, kw.get("signal"), updates.append)


@pytest.fixture(params=["auto", "legacy"])
def protocol(request: pytest.FixtureRequest) -> str:
    """Both protocol eras: 2026-07-28 (discover) and the initialize handshake."""
    return str(request.param)


async def test_lists_every_page_with_schema_and_description(
    demo_config: McpServerConfig, protocol: Any
) -> None:
    async with McpServers([demo_config], environ=ENV, protocol=protocol) as servers:
        assert servers.tools() == []  # nothing starts before first use
        tools = await servers.load_tools()
        names = [t.name for t in tools]
        # 11 tools over 4 pages of 3
        assert len(names) == 11
        assert names[0] == "mcp__demo__echo"
        assert "mcp__demo__bad_name_with_spaces" in names
        echo = by_remote(tools)["echo"]
        assert echo.description == "Echo the text back."
        assert echo.parameters["required"] == ["text"]
        assert servers.get("demo").state == "ready"
        result = await call(echo, {"text": "hi"})
        assert result.content == [TextContent(text="hi")]
        assert result.details == {"server": "demo", "tool": "echo"}


async def test_images_resources_and_structured_content(demo_config: McpServerConfig) -> None:
    async with McpServers([demo_config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        picture = await call(tools["picture"])
        assert isinstance(picture.content[1], ImageContent)
        assert picture.content[1].mime_type == "image/png"
        kinds = await call(tools["kinds"])
        texts = [b.text for b in kinds.content if isinstance(b, TextContent)]
        assert texts[0] == "[audio: audio/wav, 72 bytes]"
        assert texts[1].startswith("[resource link: readme <file:///readme.md>")
        assert texts[2].startswith("[resource <file:///big.txt> (text/plain)]\nxxx")
        assert len(texts[2]) < 4_200 and "more characters" in texts[2]  # bounded
        assert texts[3] == "[resource <file:///blob.bin>: application/octet-stream, 72 bytes]"
        assert kinds.details["structuredContent"] == {"answer": 42, "unit": "things"}


async def test_is_error_becomes_an_error_result_the_model_sees(
    demo_config: McpServerConfig,
) -> None:
    async with McpServers([demo_config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        failed = await call(tools["fail"])
        assert failed.is_error  # returned, not raised: nothing of it is lost
        first, picture, *rest = failed.content
        assert first == TextContent(text="the disk is on fire")
        assert isinstance(picture, ImageContent) and picture.mime_type == "image/png"
        assert [b.text for b in rest if isinstance(b, TextContent)] == [
            "[audio: audio/wav, 72 bytes]",
            "[resource link: log <file:///var/log/disk>]",
            "[resource <file:///smart.txt> (text/plain)]\nreallocated: 812",
        ]
        assert failed.details == {
            "server": "demo",
            "tool": "fail",
            "structuredContent": {"device": "sda", "temperature_c": 93},
        }
        quiet = await call(tools["fail_quietly"])
        assert quiet.is_error and quiet.details["structuredContent"] == {"reason": "quota"}
        assert quiet.content == [TextContent(text='{"reason": "quota"}')]
        assert servers.get("demo").state == "ready"  # a tool error is not a server failure


async def test_progress_feeds_on_update(demo_config: McpServerConfig) -> None:
    async with McpServers([demo_config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        updates: list[AgentToolResult] = []
        result = await call(tools["slow"], {"steps": 3}, updates=updates)
        assert result.content == [TextContent(text="counted to 3")]
        texts = [u.content[0].text for u in updates if isinstance(u.content[0], TextContent)]
        assert texts == ["step 1 — 1/3 (33%)", "step 2 — 2/3 (67%)", "step 3 — 3/3 (100%)"]


async def test_progress_resets_the_timeout(demo_config: McpServerConfig) -> None:
    # 10 steps of 0.3 s = 3 s in all, longer than the 2 s timeout, each step well within it
    # (a loaded CI machine once delayed a progress notice past a 0.8 s timeout)
    config = demo_config.model_copy(update={"timeout": 2000})
    async with McpServers([config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        result = await call(tools["slow"], {"steps": 10, "delay": 0.3})
        assert result.content == [TextContent(text="counted to 10")]


async def test_timeout_cancels_the_request(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    config = stdio_config(timeout=500)
    env = {**ENV, "DEMO_MARK_FILE": str(mark)}
    config = config.model_copy(update={"env": {**config.env, "DEMO_MARK_FILE": str(mark)}})
    async with McpServers([config], environ=env) as servers:
        tools = by_remote(await servers.load_tools())
        with pytest.raises(McpCallError, match=r"timed out: no result or progress for 0.5 s"):
            await call(tools["hang"])
        for _ in range(200):
            if mark.exists():
                break
            await asyncio.sleep(0.02)
        assert mark.read_text() == "cancelled\n"  # the server saw notifications/cancelled
        assert (await call(tools["echo"], {"text": "still"})).content[0] == TextContent(
            text="still"
        )


async def test_abort_cancels_the_request(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    config = stdio_config()
    config = config.model_copy(update={"env": {**config.env, "DEMO_MARK_FILE": str(mark)}})
    async with McpServers([config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        controller = AbortController()
        asyncio.get_running_loop().call_later(0.3, controller.abort)
        with pytest.raises(McpCallError, match="cancelled"):
            await call(tools["hang"], signal=controller.signal)
        for _ in range(200):
            if mark.exists():
                break
            await asyncio.sleep(0.02)
        assert mark.read_text() == "cancelled\n"


async def test_list_changed_refreshes_the_tools(
    demo_config: McpServerConfig, protocol: Any
) -> None:
    changes: list[int] = []
    servers = McpServers([demo_config], environ=ENV, protocol=protocol)
    async with servers:
        tools = by_remote(await servers.load_tools())
        assert "extra" not in tools
        servers.on_change = lambda: changes.append(1)
        await call(tools["grow"])
        for _ in range(250):
            if servers.is_tool("mcp__demo__extra"):
                break
            await asyncio.sleep(0.02)
        assert changes
        extra = by_remote(servers.tools())["extra"]
        assert (await call(extra)).content == [TextContent(text="extra here")]


async def test_crash_marks_failed_and_the_next_call_restarts() -> None:
    async with McpServers([stdio_config()], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        with pytest.raises(McpCallError, match="demo failed"):
            await call(tools["crash"])
        connection = servers.get("demo")
        assert connection.state == "failed"
        assert connection.error is not None and "demo failed" in connection.error
        # the tools stay known; the next call starts the server again
        assert (await call(tools["echo"], {"text": "back"})).content == [TextContent(text="back")]
        assert connection.state == "ready"


async def test_http_server_gone_fails_the_call_and_is_reported(http_url: str) -> None:
    # a server of its own, stopped while connected
    import subprocess

    from .conftest import DEMO

    process = subprocess.Popen(
        [sys.executable, str(DEMO), "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = int(process.stdout.readline().split()[1])
    config = http_config(f"http://127.0.0.1:{port}/mcp")
    try:
        async with McpServers([config], environ=ENV) as servers:
            tools = by_remote(await servers.load_tools())
            process.terminate()
            process.wait(10)
            with pytest.raises(McpCallError, match="demo"):
                await call(tools["echo"], {"text": "x"})
            assert servers.get("demo").state == "failed"
    finally:
        process.kill()
        process.wait(10)
        process.stdout.close()


async def test_start_failures_are_clear_and_isolated(http_url: str) -> None:
    missing = McpServerConfig(name="missing", command="/nonexistent/mcp-server")
    refused = McpServerConfig(name="refused", url="http://127.0.0.1:9/mcp")
    unset = McpServerConfig(name="unset", url=http_url, headers={"X-Key": "${NOT_SET_ANYWHERE}"})
    async with McpServers([missing, refused, unset, http_config(http_url)], environ=ENV) as s:
        failures = await s.start()
        assert set(failures) == {"missing", "refused", "unset"}
        assert "could not start missing" in failures["missing"]
        assert "could not connect to refused" in failures["refused"]
        assert "NOT_SET_ANYWHERE is not set" in failures["unset"]
        assert s.get("missing").state == "failed"
        assert s.get("demo").state == "ready"
        assert {t.server for t in s.tools()} == {"demo"}
        with pytest.raises(McpStartError):
            await s.get("missing").start()


async def test_secrets_expand_at_connect_time_only(demo_config: McpServerConfig) -> None:
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    async with McpServers([demo_config], environ=ENV) as servers:
        tools = by_remote(await servers.load_tools())
        result = await call(tools["check_secret"], {"sha256": digest})
        assert result.content == [TextContent(text="secret matches")]
        # the configuration keeps the reference, its summary names keys only
        dumped = json.dumps(demo_config.model_dump(mode="json"))
        assert SECRET not in dumped and "${DEMO_SECRET}" in dumped
        assert SECRET not in demo_config.describe()


async def test_names_unique_across_servers_and_switchable() -> None:
    a, b = stdio_config("x.y"), stdio_config("x_y")  # both sanitise to mcp__x_y__…
    async with McpServers([a, b], environ=ENV) as servers:
        tools = await servers.load_tools()
        names = [t.name for t in tools]
        assert len(names) == len(set(names)) == 22
        first = next(t for t in tools if t.server == "x.y")
        second = next(t for t in tools if t.server == "x_y")
        assert first.name == "mcp__x_y__echo"
        assert second.name.startswith("mcp__x_y__echo_") and len(second.name) <= 64
        assert servers.disable("mcp__x_y__echo")
        assert "mcp__x_y__echo" not in [t.name for t in servers.tools()]
        servers.enable("mcp__x_y__echo")
        assert "mcp__x_y__echo" in [t.name for t in servers.tools()]


async def test_an_agent_uses_mcp_tools_from_plain_python() -> None:
    faux = register_faux_provider()
    try:
        faux.set_responses(
            [
                faux_assistant_message(
                    [faux_tool_call("mcp__demo__echo", {"text": "via mcp"})],
                    stop_reason="toolUse",
                ),
                faux_assistant_message([faux_text("done")]),
            ]
        )
        async with McpServers([stdio_config()], environ=ENV) as servers:
            agent = Agent(model=faux.get_model(), tools=await servers.load_tools())
            await agent.prompt("echo something")
            results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
            assert results[0].content == [TextContent(text="via mcp")]
            assert not results[0].is_error
    finally:
        faux.unregister()


async def test_a_harness_follows_list_changes_from_plain_python(
    tmp_path: Path, demo_config: McpServerConfig, protocol: Any
) -> None:
    from pi_notebook.harness import AgentHarness, JsonlSessionStorage, Session

    faux = register_faux_provider()
    try:
        faux.set_responses(
            [
                faux_assistant_message(
                    [faux_tool_call("mcp__demo__grow", {})], stop_reason="toolUse"
                ),
                faux_assistant_message([faux_text("grown")]),
                faux_assistant_message(
                    [faux_tool_call("mcp__demo__extra", {})], stop_reason="toolUse"
                ),
                faux_assistant_message([faux_text("done")]),
            ]
        )
        session = Session.create(JsonlSessionStorage(tmp_path / "s.jsonl"))
        async with McpServers([demo_config], environ=ENV, protocol=protocol) as servers:
            harness = AgentHarness(session, faux.get_model(), tools=await servers.load_tools())
            servers.on_change = lambda: harness.set_tools(servers.tools())
            await harness.prompt("grow")
            # the change may come on a stream of its own (Streamable HTTP, 2026-07-28)
            for _ in range(250):
                if servers.is_tool("mcp__demo__extra"):
                    break
                await asyncio.sleep(0.02)
            await harness.prompt("use the new tool")
            messages = session.build_context().messages
            results = [m for m in messages if isinstance(m, ToolResultMessage)]
            assert [r.tool_name for r in results] == ["mcp__demo__grow", "mcp__demo__extra"]
            assert results[1].content == [TextContent(text="extra here")]
            assert not results[1].is_error
    finally:
        faux.unregister()
