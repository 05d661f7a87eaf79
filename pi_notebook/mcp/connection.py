"""``McpConnection``: one MCP server, through the official ``mcp`` SDK (imported on first start).

The SDK's ``Client`` must be entered and left in the same task (anyio cancel scopes), so each
connection has an owner task on the running event loop that holds ``async with Client(...)``
until it is told to stop; calls are made from the callers' tasks. Nothing here blocks the loop:
the stdio transport spawns the server with anyio, HTTP goes through the SDK's async client.

A transport failure (the process died, the HTTP server went away) marks the connection failed
and ends its owner task; the next call starts the server again. A JSON-RPC error reply is only
that call's failure. Tool lists are paginated and refreshed on ``notifications/tools/list_changed``
(handshake-era servers) or a ``subscriptions/listen`` event (2026-07-28 servers).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

from ..ai.abort import AbortSignal
from .config import McpServerConfig, expand, redact_url

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "McpCallError",
    "McpConnection",
    "McpConnectionState",
    "McpStartError",
    "RemoteTool",
]

logger = logging.getLogger(__name__)

McpConnectionState = Literal["stopped", "starting", "ready", "failed"]
ProgressCallback = Callable[[float, float | None, str | None], None]

_MAX_PAGES = 1_000
"""A server whose ``tools/list`` cursor never ends is cut off here."""
_STDERR_TAIL = 800


class McpStartError(RuntimeError):
    """The server could not be started or connected to."""


class McpCallError(RuntimeError):
    """A tool call failed outside the tool (timeout, cancellation, transport, protocol)."""


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None


@dataclass
class _Live:
    """What exists while the owner task holds the connection."""

    client: Client
    stop: asyncio.Event = field(default_factory=asyncio.Event)


def _flatten(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio task groups wrap failures)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    leaf = _flatten(exc)
    text = str(leaf).strip() or type(leaf).__name__
    return redact_url(text)


class McpConnection:
    """One configured MCP server: start, list tools, call them, stop."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        environ: Mapping[str, str] | None = None,
        on_tools_changed: Callable[[McpConnection], None] | None = None,
        protocol: Literal["auto", "legacy"] = "auto",
    ) -> None:
        self.config = config
        self.protocol = protocol
        """``auto``: the newest protocol the server speaks; ``legacy``: the initialize handshake."""
        self.environ = environ
        self.on_tools_changed = on_tools_changed
        self.state: McpConnectionState = "stopped"
        self.error: str | None = None
        self.tools: list[RemoteTool] = []
        self.protocol_version: str | None = None
        self._live: _Live | None = None
        self._owner: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._stderr: IO[str] | None = None
        self._refreshing: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (spawning a stdio server) and list its tools; a no-op when ready.

        Raises ``McpStartError`` with a clear reason (the server is then ``failed``)."""
        async with self._start_lock:
            if self.state == "ready" and self._live is not None:
                return
            await self._stop_owner()
            self.state = "starting"
            self.error = None
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._owner = asyncio.ensure_future(self._own(ready))
            try:
                await asyncio.shield(ready)
            except asyncio.CancelledError:
                await self._stop_owner()
                self.state = "stopped"
                raise
            except McpStartError as exc:
                self._mark_failed(str(exc))
                raise

    async def stop(self) -> None:
        """Disconnect (a stdio server's process is ended)."""
        async with self._start_lock:
            await self._stop_owner()
            self.state = "stopped"
            self.error = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def _stop_owner(self) -> None:
        owner, live = self._owner, self._live
        self._owner = None
        if live is not None:
            live.stop.set()
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 10)
            except (TimeoutError, asyncio.CancelledError):
                owner.cancel()
                with contextlib.suppress(BaseException):
                    await owner
        self._live = None

    def _mark_failed(self, reason: str) -> None:
        self.state = "failed"
        self.error = reason
        live = self._live
        if live is not None:
            live.stop.set()  # the owner task leaves the Client and ends the process

    def _transport(self) -> Any:
        """The SDK transport for this configuration, with ``${VAR}`` filled in now."""
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        config, env = self.config, self.environ
        try:
            if config.command is not None:
                params = StdioServerParameters(
                    command=expand(config.command, env),
                    args=[expand(a, env) for a in config.args],
                    env={k: expand(v, env) for k, v in config.env.items()} or None,
                    cwd=expand(config.cwd, env) if config.cwd else None,
                )
                if self._stderr is not None:
                    self._stderr.close()
                self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 - closed by aclose()
                return stdio_client(params, errlog=self._stderr)
            headers = {k: expand(v, env) for k, v in config.headers.items()}
            url = expand(config.url or "", env)

            @contextlib.asynccontextmanager
            async def http_transport() -> AsyncIterator[Any]:
                # the SDK leaves a client it was given open: this one is closed with the transport
                async with (
                    create_mcp_http_client(headers=headers or None) as http,
                    streamable_http_client(url, http_client=http) as streams,
                ):
                    yield streams

            return http_transport()
        except ValueError as exc:  # McpConfigError, bad parameters
            raise McpStartError(str(exc)) from None

    def _stderr_tail(self) -> str:
        log = self._stderr
        if log is None:
            return ""
        try:
            log.flush()
            log.seek(0)
            text = log.read()[-_STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"\nserver stderr: {text}" if text else ""

    async def _own(self, ready: asyncio.Future[None]) -> None:
        """The owner task: hold the connection until told to stop or the transport fails."""
        listen: asyncio.Task[None] | None = None
        try:
            try:
                from mcp import Client
                from mcp.types import Implementation
            except ImportError:
                raise McpStartError(
                    "the mcp package is not installed: pip install 'pi-notebook[mcp]'"
                ) from None
            transport = self._transport()
            client = Client(
                transport,
                message_handler=self._on_message,
                mode=self.protocol,
                client_info=Implementation(name="pi-notebook", version="0.1.0"),
                cache=None,
            )
            async with client:
                live = _Live(client)
                self._live = live
                self.protocol_version = client.protocol_version
                self.tools = await self._list_tools(client)
                self.state = "ready"
                listen = asyncio.ensure_future(self._listen(client))
                ready.set_result(None)
                await live.stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(McpStartError(f"starting {self.name} was cancelled"))
        except McpStartError as exc:
            ready.set_exception(exc)
        except BaseException as exc:
            reason = _describe(exc)
            if not ready.done():
                what = "start" if self.config.command else "connect to"
                message = f"could not {what} {self.name}: {reason}{self._stderr_tail()}"
                ready.set_exception(McpStartError(message))
            elif self.state == "ready":
                self._mark_failed(f"{self.name} failed: {reason}{self._stderr_tail()}")
            if not isinstance(exc, Exception):
                raise
        finally:
            if self._refreshing is not None:
                self._refreshing.cancel()
            if listen is not None:
                listen.cancel()
                with contextlib.suppress(BaseException):
                    await listen
            self._live = None
            if self.state in ("ready", "starting"):
                self.state = "stopped"

    # --- tools -----------------------------------------------------------------------------------

    async def _list_tools(self, client: Client) -> list[RemoteTool]:
        """Every page of ``tools/list``."""
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            for t in page.tools:
                schema = dict(t.input_schema) if t.input_schema else {"type": "object"}
                schema.setdefault("type", "object")
                description = t.description or t.title or t.name
                tools.append(RemoteTool(t.name, description, schema, t.title))
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def refresh_tools(self) -> None:
        """List the tools again (after a change notification) and tell ``on_tools_changed``."""
        live = self._live
        if live is None:
            return
        try:
            self.tools = await self._list_tools(live.client)
        except Exception as exc:
            logger.warning("MCP server %s: listing tools failed: %s", self.name, _describe(exc))
            return
        if self.on_tools_changed is not None:
            self.on_tools_changed(self)

    def _schedule_refresh(self) -> None:
        previous = self._refreshing

        async def refresh() -> None:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            await self.refresh_tools()

        self._refreshing = asyncio.ensure_future(refresh())

    async def _settle_refresh(self, limit: float) -> None:
        """Let a tool-list refresh the call caused finish first, so the model's next turn
        already sees the changed tools."""
        await asyncio.sleep(0)  # a change notification read with the result is handled now
        refreshing = self._refreshing
        if refreshing is not None and not refreshing.done():
            await asyncio.wait([refreshing], timeout=limit)

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            self._schedule_refresh()

    async def _listen(self, client: Client) -> None:
        """On 2026-07-28 connections, list changes arrive on a ``subscriptions/listen`` stream."""
        from mcp.client.subscriptions import ListenNotSupportedError

        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._schedule_refresh()
        except ListenNotSupportedError:
            return  # a handshake-era server: notifications/tools/list_changed instead
        except Exception as exc:
            logger.debug("MCP server %s: listen ended: %s", self.name, _describe(exc))

    # --- calls -----------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        signal: AbortSignal | None = None,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Call ``name``; the SDK's ``CallToolResult`` (``is_error`` results included).

        Starts the server if it is not running. ``timeout`` (seconds; the configured one when
        None) restarts on every progress notification. ``signal`` firing (the run's abort, or
        the tool card's stop of this one call), or the timeout, cancels the request (the SDK
        sends ``notifications/cancelled``). Raises ``McpCallError``."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        if signal is not None and signal.aborted:
            raise McpCallError("aborted before the call started")
        if self.state != "ready" or self._live is None:
            try:
                await self.start()
            except McpStartError as exc:
                raise McpCallError(str(exc)) from None
        live = self._live
        if live is None:
            raise McpCallError(f"{self.name} is not connected")
        limit = self.config.timeout_seconds if timeout is None else timeout
        loop = asyncio.get_running_loop()
        last_activity = loop.time()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            nonlocal last_activity
            last_activity = loop.time()
            if on_progress is not None:
                on_progress(progress, total, message)

        call = asyncio.ensure_future(
            live.client.call_tool(name, arguments, progress_callback=progress)
        )
        remove = signal.add_listener(lambda _s: call.cancel()) if signal is not None else None
        try:
            while True:
                remaining = last_activity + limit - loop.time()
                if remaining <= 0:
                    call.cancel()
                    with contextlib.suppress(BaseException):
                        await call
                    raise McpCallError(
                        f"{name} on {self.name} timed out: no result or progress for {limit:g} s"
                    )
                done, _ = await asyncio.wait({call}, timeout=remaining)
                if done:
                    result = call.result()
                    await self._settle_refresh(limit)
                    return result
        except asyncio.CancelledError:
            if signal is not None and signal.aborted:
                why = signal.reason if isinstance(signal.reason, str) else "run aborted"
                raise McpCallError(f"{name} on {self.name} was cancelled ({why})") from None
            call.cancel()
            raise
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._mark_failed(f"{self.name} failed: {exc.message}{self._stderr_tail()}")
                raise McpCallError(f"{self.name} failed: {exc.message}") from None
            raise McpCallError(f"{name} on {self.name}: {exc.message}") from None
        except McpCallError:
            raise
        except Exception as exc:
            reason = _describe(exc)
            self._mark_failed(f"{self.name} failed: {reason}{self._stderr_tail()}")
            raise McpCallError(f"{self.name} failed: {reason}") from None
        finally:
            if remove is not None:
                remove()

    async def aclose(self) -> None:
        await self.stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
