"""``StreamOptions``: what a caller may pass to ``stream()`` besides the model and context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from .abort import AbortSignal
from .types import Model, ThinkingLevel

if TYPE_CHECKING:
    import httpx

__all__ = ["ResponseInfo", "StallNotice", "StreamOptions"]


@dataclass(frozen=True, slots=True)
class ResponseInfo:
    """What ``on_response`` receives: the HTTP status and headers, before the body is read."""

    status: int
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class StallNotice:
    """What ``on_stall`` receives while a request waits for data.

    ``stalled=True``: nothing arrived for ``waited_ms`` (sent once the silence reaches
    ``stall_ms``, then again every ``stall_ms`` while it lasts); ``stalled=False``: data flows
    again (or the request ended) after a stall of ``waited_ms``."""

    stalled: bool
    waited_ms: int


@dataclass(slots=True)
class StreamOptions:
    """Options of one model call. Unknown keyword arguments are kept in ``extra`` and ignored by
    providers that do not know them (the agent loop passes its whole config, as pi does)."""

    api_key: str | None = None
    signal: AbortSignal | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    headers: dict[str, str] | None = None
    session_id: str | None = None
    max_retries: int = 2
    max_retry_delay_ms: int = 60_000
    timeout_ms: int | None = None
    cache_retention: Literal["none", "short", "long"] = "short"
    metadata: dict[str, Any] | None = None
    reasoning: ThinkingLevel | None = None
    thinking_budgets: dict[str, int] | None = None
    on_payload: Callable[[dict[str, Any], Model], Any] | None = None
    on_response: Callable[[ResponseInfo, Model], Any] | None = None
    stall_ms: int = 5000
    """Silence (no response yet, or no streamed event) that counts as a stall."""
    on_stall: Callable[[StallNotice], Any] | None = None
    """Told when a request stalls and when it resumes (sync or async; its errors are logged)."""
    http_client: httpx.AsyncClient | None = None
    """The client that carries the requests (a test's ``httpx.MockTransport``, a proxy or TLS
    setup of the caller's own); the caller closes it. By default a shared client per event loop
    (``http.get_client``)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_kwargs(cls, options: Mapping[str, Any]) -> StreamOptions:
        known = {f.name for f in fields(cls)} - {"extra"}
        kwargs = {k: v for k, v in options.items() if k in known and v is not None}
        extra = {k: v for k, v in options.items() if k not in known}
        return cls(**kwargs, extra=extra)


async def maybe_await(value: Any) -> Any:
    """Await ``value`` if it is awaitable (hooks may be sync or async)."""
    if isinstance(value, Awaitable):
        return await value
    return value
