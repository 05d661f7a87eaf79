"""A real MCP server for the tests, written with the SDK's low-level server API.

``python demo_server.py stdio`` serves on stdin/stdout; ``python demo_server.py http`` serves
Streamable HTTP on 127.0.0.1 (a free port, printed as ``PORT <n>`` on stdout). Its tools cover
what the client must handle: paginated listing (3 tools a page), a list change, images, other
content kinds with structured content, ``isError`` with every content kind, progress (a
cancelled count is written to ``$DEMO_MARK_FILE``), a call that never ends (its
cancellation is written to ``$DEMO_MARK_FILE``), a crash, and the check of a secret passed in
the environment or a header (only a verdict goes back, never the secret). A stdio server writes
its pid to ``$DEMO_PID_FILE``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import socket
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.subscriptions import ToolsListChanged

PAGE = 3
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f5a8a90000000049454e44ae426082"
    )
).decode()

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    types.Tool(
        name="echo",
        description="Echo the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(name="picture", description="A tiny PNG.", input_schema=OBJECT),
    types.Tool(name="kinds", description="Every other content kind.", input_schema=OBJECT),
    types.Tool(name="fail", description="Always reports an error.", input_schema=OBJECT),
    types.Tool(
        name="slow",
        description="Count with progress notifications.",
        input_schema={
            "type": "object",
            "properties": {"steps": {"type": "integer"}, "delay": {"type": "number"}},
        },
    ),
    types.Tool(name="hang", description="Never returns.", input_schema=OBJECT),
    types.Tool(name="crash", description="Kills the server.", input_schema=OBJECT),
    types.Tool(name="grow", description="Adds the tool 'extra'.", input_schema=OBJECT),
    types.Tool(
        name="check_secret",
        description="Says whether the secret it got (env SECRET or header X-Secret) has the "
        "given sha256.",
        input_schema={"type": "object", "properties": {"sha256": {"type": "string"}}},
    ),
    types.Tool(name="bad.name/with spaces", description="A name to sanitise.", input_schema=OBJECT),
    types.Tool(
        name="fail_quietly",
        description="An error with only structured content.",
        input_schema=OBJECT,
    ),
]
EXTRA = types.Tool(name="extra", description="Appeared after grow.", input_schema=OBJECT)

bus = InMemorySubscriptionBus()
tools = list(TOOLS)


def text(value: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=value)]


async def list_tools(
    _ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    cursor = str(end) if end < len(tools) else None
    return types.ListToolsResult(tools=tools[start:end], next_cursor=cursor)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return types.CallToolResult(content=text(str(args.get("text", ""))))
    if name == "picture":
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="a 1×1 picture"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            ]
        )
    if name == "kinds":
        return types.CallToolResult(
            content=[
                types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
                types.ResourceLink(
                    type="resource_link",
                    name="readme",
                    uri="file:///readme.md",
                    mime_type="text/markdown",
                    description="the readme",
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(
                        uri="file:///big.txt", mime_type="text/plain", text="x" * 10_000
                    ),
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="file:///blob.bin", mime_type="application/octet-stream", blob=PNG
                    ),
                ),
            ],
            structured_content={"answer": 42, "unit": "things"},
        )
    if name == "fail":  # an error result with every content kind
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text="the disk is on fire"),
                types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                types.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
                types.ResourceLink(type="resource_link", name="log", uri="file:///var/log/disk"),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.TextResourceContents(
                        uri="file:///smart.txt", mime_type="text/plain", text="reallocated: 812"
                    ),
                ),
            ],
            structured_content={"device": "sda", "temperature_c": 93},
            is_error=True,
        )
    if name == "fail_quietly":  # isError with nothing but structured content
        return types.CallToolResult(
            content=[], structured_content={"reason": "quota"}, is_error=True
        )
    if name == "slow":
        steps = int(args.get("steps", 3))
        done = 0
        try:
            for i in range(steps):
                await ctx.session.report_progress(i + 1, steps, f"step {i + 1}")
                await anyio.sleep(float(args.get("delay", 0.05)))
                done = i + 1
        except anyio.get_cancelled_exc_class():
            mark = os.environ.get("DEMO_MARK_FILE")
            if mark:
                with open(mark, "a", encoding="utf-8") as f:
                    f.write(f"slow cancelled after {done} of {steps}\n")
            raise
        return types.CallToolResult(content=text(f"counted to {steps}"))
    if name == "hang":
        mark = os.environ.get("DEMO_MARK_FILE")
        try:
            await anyio.sleep_forever()
        finally:
            if mark:
                with open(mark, "a", encoding="utf-8") as f:
                    f.write("cancelled\n")
    if name == "crash":
        sys.stdout.flush()
        os._exit(3)
    if name == "grow":
        if EXTRA not in tools:
            tools.append(EXTRA)
        # handshake-era clients; tied to this request, so over Streamable HTTP it travels on
        # the call's own stream, ahead of the result (not on the GET stream, which may be late)
        await ctx.session.send_notification(
            types.ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        await bus.publish(ToolsListChanged())  # 2026-07-28 clients (subscriptions/listen)
        return types.CallToolResult(content=text("grown"))
    if name == "check_secret":
        headers = getattr(ctx.request, "headers", None) or {}
        secret = headers.get("x-secret") or os.environ.get("SECRET", "")
        ok = hashlib.sha256(secret.encode()).hexdigest() == args.get("sha256")
        return types.CallToolResult(content=text("secret matches" if ok else "secret differs"))
    if name == "extra":
        return types.CallToolResult(content=text("extra here"))
    return types.CallToolResult(content=text(f"unknown tool {name}"), is_error=True)


server: Server[Any] = Server(
    "demo",
    version="1.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus),
)


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    pid_file = os.environ.get("DEMO_PID_FILE")
    if pid_file:
        with open(pid_file, "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections made once PORT is printed wait in the backlog
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        anyio.run(serve_stdio)
