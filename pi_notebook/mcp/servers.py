"""``McpServers``: the MCP servers an agent uses, as one source of tools.

Plain Python (no notebook)::

    async with McpServers([McpServerConfig(name="time", command="mcp-server-time")]) as mcp:
        harness = AgentHarness(session, model, tools=await mcp.load_tools())
        mcp.on_change = lambda: harness.set_tools(mcp.tools())

Servers start on first use (``load_tools`` / ``start``), not when configured. Tool names are
``mcp__<server>__<tool>``, unique across servers; single tools can be switched off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Literal

from .config import McpServerConfig
from .connection import McpConnection, McpStartError
from .naming import mcp_tool_name
from .tool import McpTool, make_mcp_tool

__all__ = ["McpServers"]

logger = logging.getLogger(__name__)


class McpServers:
    """A set of MCP server connections and the ``McpTool``s they offer."""

    def __init__(
        self,
        configs: Iterable[McpServerConfig] = (),
        *,
        environ: Mapping[str, str] | None = None,
        on_change: Callable[[], None] | None = None,
        protocol: Literal["auto", "legacy"] = "auto",
    ) -> None:
        self.environ = environ
        self.protocol: Literal["auto", "legacy"] = protocol
        self.on_change = on_change
        """Called (no arguments) whenever the set of tools changes."""
        self._connections: dict[str, McpConnection] = {}
        self._disabled: set[str] = set()
        self._tools: list[McpTool] | None = None
        for config in configs:
            self.add(config)

    # --- configuration ---------------------------------------------------------------------------

    def add(self, config: McpServerConfig) -> McpConnection:
        """Configure a server (not started). A server of the same name must be removed first."""
        if config.name in self._connections:
            raise KeyError(f"An MCP server named {config.name!r} exists (remove it first)")
        connection = McpConnection(
            config,
            environ=self.environ,
            on_tools_changed=lambda _c: self._changed(),
            protocol=self.protocol,
        )
        self._connections[config.name] = connection
        self._changed()
        return connection

    async def remove(self, name: str) -> None:
        connection = self.get(name)
        del self._connections[name]
        await connection.aclose()
        self._changed()

    async def restart(self, name: str) -> None:
        """Stop and start ``name`` (raises ``McpStartError`` when it does not come up)."""
        connection = self.get(name)
        try:
            await connection.restart()
        finally:
            self._changed()

    def get(self, name: str) -> McpConnection:
        try:
            return self._connections[name]
        except KeyError:
            raise KeyError(f"No MCP server named {name!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._connections

    def __len__(self) -> int:
        return len(self._connections)

    @property
    def connections(self) -> list[McpConnection]:
        return list(self._connections.values())

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self, *, retry_failed: bool = False) -> dict[str, str]:
        """Start every enabled server not running yet, concurrently; ``{name: reason}`` for
        those that failed (they are marked failed; the others are unaffected)."""
        todo = [
            c
            for c in self._connections.values()
            if c.config.enabled and (c.state == "stopped" or (retry_failed and c.state == "failed"))
        ]
        if not todo:
            return {}
        results = await asyncio.gather(*(c.start() for c in todo), return_exceptions=True)
        failures: dict[str, str] = {}
        for connection, outcome in zip(todo, results, strict=True):
            if isinstance(outcome, McpStartError):
                failures[connection.name] = str(outcome)
                logger.warning("MCP server %s is not available: %s", connection.name, outcome)
            elif isinstance(outcome, BaseException):
                raise outcome
        self._changed()
        return failures

    async def aclose(self) -> None:
        """Stop every server."""
        for connection in list(self._connections.values()):
            with contextlib.suppress(Exception):
                await connection.aclose()
        self._changed()

    async def __aenter__(self) -> McpServers:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- tools -----------------------------------------------------------------------------------

    def _changed(self) -> None:
        self._tools = None
        if self.on_change is not None:
            self.on_change()

    def all_tools(self) -> list[McpTool]:
        """Every known tool (of servers that listed them), switched on or off."""
        if self._tools is None:
            taken: set[str] = set()
            made: list[McpTool] = []
            for connection in self._connections.values():
                if not connection.config.enabled:
                    continue
                for remote in connection.tools:
                    name = mcp_tool_name(connection.name, remote.name, taken)
                    taken.add(name)
                    made.append(make_mcp_tool(connection, remote, name))
            self._tools = made
        return list(self._tools)

    def tools(self) -> list[McpTool]:
        """The tools switched on (all, unless ``disable``\\ d)."""
        return [t for t in self.all_tools() if t.name not in self._disabled]

    async def load_tools(self) -> list[McpTool]:
        """Start the servers that are not running, then ``tools()`` (a server that does not
        start is logged as a warning and left out; ``start()`` returns the reasons)."""
        await self.start()
        return self.tools()

    def is_tool(self, name: str) -> bool:
        return any(t.name == name for t in self.all_tools())

    def enable(self, name: str) -> None:
        if not self.is_tool(name):
            raise KeyError(f"No MCP tool named {name!r}")
        self._disabled.discard(name)
        self._changed()

    def disable(self, name: str) -> bool:
        """Switch a tool off; False if it was not on."""
        if not self.is_tool(name) or name in self._disabled:
            return False
        self._disabled.add(name)
        self._changed()
        return True

    def is_enabled(self, name: str) -> bool:
        return name not in self._disabled
