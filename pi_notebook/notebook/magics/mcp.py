"""``%mcp``: MCP servers as tool sources of the kernel's agent.

    %mcp add NAME -- COMMAND [ARGS ...]          a stdio server
    %mcp add NAME URL [--header K=V ...]          a Streamable HTTP server
         options: --env K=V (stdio), --cwd DIR, --timeout MS, --ask (approve every call)
    %mcp list | remove NAME | restart NAME

Servers configured in pi's ``mcp.json`` (``~/.pi/agent/mcp.json``, and ``.pi/mcp.json`` or
``mcp.json`` next to the notebook) are known from ``%load_ext`` on; none starts before the first
run that follows. ``${VAR}`` in values is filled in from the environment when a server starts and
is never printed (header and env values are not shown at all).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand

from ...mcp.paths import config_paths
from .base import AgentMagics
from .tools import first_sentence

if TYPE_CHECKING:
    from ...mcp.config import McpServerConfig
    from ..kernel_agent import NotebookAgent

__all__ = ["McpMagics", "load_configured_servers", "notebook_dir"]

USAGE = (
    "Usage: %mcp add NAME -- COMMAND [ARGS ...] | add NAME URL | list | remove NAME | "
    "restart NAME (options: see %mcp?)"
)
"""One line, as every magic's usage error is; ``%mcp?`` has the whole usage."""


ADD_USAGE = (
    "Usage: %mcp add NAME -- COMMAND [ARGS ...] (stdio) or %mcp add NAME URL (HTTP); "
    "options: see %mcp?"
)


def notebook_dir() -> Path:
    """The directory of this kernel's notebook (where its ``mcp.json`` may be)."""
    name = os.environ.get("JPY_SESSION_NAME")
    if name and Path(name).is_absolute():
        return Path(name).parent
    return Path.cwd()


def load_configured_servers(agent: NotebookAgent, directory: Path | None = None) -> list[str]:
    """Add the servers of the ``mcp.json`` files to ``agent`` (not started); the problems found
    (an unreadable file is reported, never fatal). Without any ``mcp.json`` the configuration
    models are not even imported (``%load_ext`` stays light)."""
    paths = [path for path in config_paths(directory or notebook_dir()) if path.is_file()]
    if not paths:
        return []
    from ...mcp.config import load_mcp_config

    servers, problems = load_mcp_config(paths)
    for config in servers:
        if config.name not in agent.mcp:
            agent.mcp.add(config)
    return problems


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} takes KEY=VALUE, not {value!r}")
        pairs[key.strip()] = rest
    return pairs


def parse_add(tokens: list[str]) -> McpServerConfig:
    """``%mcp add`` arguments as a configuration (``UsageError`` when they make none)."""
    from ...mcp.config import McpServerConfig

    command: list[str] | None = None
    if "--" in tokens:
        cut = tokens.index("--")
        tokens, command = tokens[:cut], tokens[cut + 1 :]
        if not command:
            raise UsageError("Nothing after --: give the command that starts the server.")
    positional: list[str] = []
    options: dict[str, list[str]] = {"--header": [], "--env": [], "--cwd": [], "--timeout": []}
    ask = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--ask":
            ask = True
        elif token in options:
            if i + 1 >= len(tokens):
                raise UsageError(f"{token} needs a value.")
            options[token].append(tokens[i + 1])
            i += 1
        elif token.startswith("--"):
            raise UsageError(f"Unknown option {token}: see %mcp? for the options.")
        else:
            positional.append(token)
        i += 1
    if not positional:
        raise UsageError(ADD_USAGE)
    name, rest = positional[0], positional[1:]
    entry: dict[str, Any] = {"name": name, "source": "%mcp add", "requireApproval": ask}
    if command is not None:
        if rest:
            raise UsageError(f"Put the command after --, not {' '.join(rest)!r}.")
        if options["--header"]:
            raise UsageError("--header is for HTTP servers; use --env for a stdio server.")
        entry |= {"command": command[0], "args": command[1:]}
        entry["env"] = _pairs(options["--env"], "--env")
        if options["--cwd"]:
            entry["cwd"] = options["--cwd"][-1]
    else:
        if len(rest) != 1:
            raise UsageError(f"Give either a URL or -- COMMAND. {ADD_USAGE}")
        if options["--env"] or options["--cwd"]:
            raise UsageError("--env and --cwd are for stdio servers (-- COMMAND).")
        entry |= {"url": rest[0], "headers": _pairs(options["--header"], "--header")}
    if options["--timeout"]:
        try:
            entry["timeout"] = float(options["--timeout"][-1])
        except ValueError:
            raise UsageError("--timeout takes milliseconds, e.g. --timeout 30000") from None
    try:
        return McpServerConfig.model_validate(entry)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        errors = getattr(exc, "errors", None)
        detail = (
            "; ".join(str(e.get("msg", "")).removeprefix("Value error, ") for e in errors())
            if callable(errors)
            else str(exc)
        )
        raise UsageError(detail) from None


@magics_class
class McpMagics(AgentMagics):
    """%mcp."""

    @no_var_expand  # ${VAR} must reach the configuration as written, not as a notebook variable
    @line_magic
    def mcp(self, line: str) -> None:
        """MCP servers as tools; they start with the next run.

        %mcp add NAME -- COMMAND [ARGS ...]  [--env K=V] [--cwd DIR] [--timeout MS] [--ask]
        %mcp add NAME URL  [--header K=V ...] [--timeout MS] [--ask]
        %mcp list
        %mcp remove NAME
        %mcp restart NAME

        --ask asks for approval before every call; ${VAR} in a value is filled in from the
        environment when the server starts and never shown.
        """
        try:
            tokens = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{exc}. {USAGE}") from None
        action, args = (tokens[0], tokens[1:]) if tokens else ("list", [])
        if action == "add":
            self._add(args)
        elif action == "list":
            if args:
                raise UsageError("Usage: %mcp list")
            self._list()
        elif action in ("remove", "restart"):
            if len(args) != 1:
                raise UsageError(f"Usage: %mcp {action} NAME")
            if args[0] not in self.pi.mcp:
                raise UsageError(f"No MCP server named {args[0]!r} (see %mcp list)")
            (self._remove if action == "remove" else self._restart)(args[0])
        else:
            raise UsageError(f"Unknown action {action!r}. {USAGE}")

    def _add(self, args: list[str]) -> None:
        config = parse_add(args)
        if config.name in self.pi.mcp:
            raise UsageError(f"An MCP server named {config.name!r} exists: %mcp remove it first.")
        self.pi.mcp.add(config)
        ask = ", asks before every call" if config.require_approval else ""
        print(
            f"Added the MCP server {config.name} ({config.transport}: {config.describe()}{ask}); "
            "it starts with the next run."
        )

    def _list(self) -> None:
        connections = self.pi.mcp.connections
        if not connections:
            print("No MCP servers (add one with %mcp add, or in mcp.json).")
            return
        tools = self.pi.mcp.all_tools()
        for connection in connections:
            config = connection.config
            state = connection.state if config.enabled else "disabled"
            extra = ", asks before every call" if config.require_approval else ""
            print(f"{config.name} [{state}] {config.transport}: {config.describe()}{extra}")
            if connection.error:
                for text in connection.error.splitlines():
                    print(f"    {text}")
            mine = [t for t in tools if t.server == config.name]
            if mine:
                for t in mine:
                    mark = "on " if self.pi.mcp.is_enabled(t.name) else "off"
                    print(f"    [{mark}] {t.name} {first_sentence(t.description)}")
            elif connection.state == "stopped":
                print("    (tools are listed once it starts: with the next run)")

    def _remove(self, name: str) -> None:
        async def remove() -> None:
            await self.pi.mcp.remove(name)
            print(f"Removed the MCP server {name}.")

        self.pi.enqueue(remove)

    def _restart(self, name: str) -> None:
        async def restart() -> None:
            from ...mcp.config import McpConfigError
            from ...mcp.connection import McpStartError

            try:
                await self.pi.mcp.restart(name)
            except (McpStartError, McpConfigError) as exc:
                print(f"%mcp restart failed: {exc}")
            else:
                count = len([t for t in self.pi.mcp.all_tools() if t.server == name])
                print(f"Restarted the MCP server {name}: {count} tools.")

        self.pi.enqueue(restart)
