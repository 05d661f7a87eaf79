"""MCP server configuration: what to start or where to connect, in pi's ``mcp.json`` shape.

A server is either stdio (``command``, ``args``, ``env``, ``cwd``) or Streamable HTTP (``url``,
``headers``). ``${VAR}`` in env values, header values, args and the URL stays unexpanded in the
configuration (so it never reaches a session file, an output or widget state) and is filled in
from the environment only when the server is started (:func:`expand`).

Files read, later ones overriding earlier ones by server name: the user's pi configuration
(``$PI_CODING_AGENT_DIR/mcp.json``, default ``~/.pi/agent/mcp.json``), then, next to the notebook,
``.pi/mcp.json`` and ``mcp.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .paths import config_paths

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "McpConfigError",
    "McpServerConfig",
    "config_paths",
    "expand",
    "load_mcp_config",
    "parse_mcp_json",
    "redact_url",
]

DEFAULT_TIMEOUT_MS = 60_000
"""A call that gets neither its result nor a progress notification for this long is cancelled."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class McpConfigError(ValueError):
    """A configuration that cannot be used (the message says which entry and why)."""


class McpServerConfig(BaseModel):
    """One MCP server (pi's ``mcp.json`` entry plus its name).

    ``timeout`` is in milliseconds, as in pi's file; progress notifications restart it.
    ``require_approval`` (``requireApproval`` in JSON) asks before every call of its tools.
    """

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    name: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)  # values may be secrets
    cwd: str | None = None
    url: str | None = Field(default=None, repr=False)  # may carry a password
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    timeout: float = Field(default=DEFAULT_TIMEOUT_MS, gt=0)
    enabled: bool = True
    require_approval: bool = Field(default=False, alias="requireApproval")
    source: str = Field(default="", exclude=True)
    """Where the entry came from (a file path, ``%mcp add``, or empty for Python)."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if not _NAME.match(self.name):
            raise ValueError(
                f"server name {self.name!r}: use letters, digits, '_', '-' or '.' (at most 64)"
            )
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r} needs either a command or a url")
        if self.url is not None and not self.url.startswith(("http://", "https://", "${")):
            raise ValueError(f"server {self.name!r}: the url must start with http:// or https://")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    @property
    def timeout_seconds(self) -> float:
        return self.timeout / 1000.0

    def describe(self) -> str:
        """A one-line summary without secrets: header and env values are never shown."""
        if self.command is not None:
            text = " ".join([self.command, *self.args])
            if self.env:
                text += f" (env: {', '.join(sorted(self.env))})"
            return text
        text = redact_url(self.url or "")
        if self.headers:
            text += f" (headers: {', '.join(sorted(self.headers))})"
        return text


def expand(value: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with ``${VAR}`` (and ``${VAR:-default}``) filled in from ``environ``.

    A variable that is unset and has no default is an error naming it (never its value)."""
    env = os.environ if environ is None else environ

    def fill(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise McpConfigError(f"the environment variable {name} is not set")

    return _VAR.sub(fill, value)


def redact_url(url: str) -> str:
    """``url`` without a password (``user:***@host``), for messages and listings."""
    return re.sub(r"(//[^/@:?#]*):[^/@?#]*@", r"\1:***@", url)


def parse_mcp_json(data: Any, source: str = "") -> list[McpServerConfig]:
    """The servers of a parsed ``mcp.json`` (``{"mcpServers": {name: entry}}``)."""
    if not isinstance(data, dict):
        raise McpConfigError(f"{source or 'mcp.json'}: expected a JSON object")
    servers = data.get("mcpServers", data.get("servers", {}))
    if not isinstance(servers, dict):
        raise McpConfigError(f"{source or 'mcp.json'}: 'mcpServers' must be an object")
    found: list[McpServerConfig] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise McpConfigError(f"{source}: server {name!r} must be an object")
        try:
            found.append(McpServerConfig.model_validate({**entry, "name": name, "source": source}))
        except ValidationError as exc:
            problems = "; ".join(_problem(e) for e in exc.errors())
            raise McpConfigError(f"{source}: server {name!r}: {problems}") from None
    return found


def _problem(error: Any) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()))
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def load_mcp_config(paths: Iterable[Path]) -> tuple[list[McpServerConfig], list[str]]:
    """The servers configured in ``paths`` (a later file wins per name) and a problem per
    unreadable file — a broken file is reported, never fatal."""
    by_name: dict[str, McpServerConfig] = {}
    problems: list[str] = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            servers = parse_mcp_json(data, str(path))
        except (OSError, json.JSONDecodeError, McpConfigError) as exc:
            problems.append(f"{path}: {exc}" if not isinstance(exc, McpConfigError) else str(exc))
            continue
        for server in servers:
            by_name.pop(server.name, None)
            by_name[server.name] = server
    return list(by_name.values()), problems
