"""HTTP for every provider: the caller's ``httpx.AsyncClient`` (``StreamOptions.http_client``)
or one shared client per event loop (httpx's API over aiohttp's HTTP parser, ``aiohttp_transport``),
closed with its loop; retries with the official SDKs' policy, error texts scrubbed of the
request's credentials (``redaction``), and SSE framing (``sse``: bytes-level, lines split on CR/LF
only — ``httpx``'s own ``iter_lines`` also splits on U+2028 and would break JSON payloads).
"""

from __future__ import annotations

import asyncio
import atexit
import email.utils
import inspect
import ipaddress
import json
import logging
import random
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from time import monotonic
from typing import Any
from urllib.parse import urlsplit

import httpx

from .models import PROVIDER_ENV_KEYS, get_env_api_key
from .options import ResponseInfo, StallNotice, StreamOptions
from .redaction import Redactor
from .sse import ServerSentEvent, SSEDecoder
from .types import Model

__all__ = [
    "ProviderError",
    "get_client",
    "is_loopback_url",
    "make_client",
    "open_sse",
    "parse_retry_after",
    "preload_transport",
    "resolve_api_key",
]

_log = logging.getLogger(__name__)

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)

_NO_RETRY_CODES = {
    "insufficient_quota",
    "credit_balance_exhausted",
    "billing_hard_limit_reached",
    "monthly_spend_limit_exceeded",
    "daily_spend_limit_exceeded",
}


class ProviderError(Exception):
    """A provider answered with an error (HTTP status, or an error event inside the stream)."""

    def __init__(
        self, message: str, *, status: int | None = None, code: str | None = None, body: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.body = body


def get_client() -> httpx.AsyncClient:
    """The shared client of the running event loop (connections are pooled and reused); it is
    closed when its loop shuts down (``asyncio.run``'s end, ``loop.shutdown_asyncgens()``)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        _sweep_closed_loops()
        client = make_client()
        _clients[loop] = client
        _close_at_shutdown(loop, client)
    return client


def make_client() -> httpx.AsyncClient:
    """A new client with the shared client's settings: httpx's API over aiohttp's C HTTP parser,
    which hands over whatever has arrived, many SSE events per read (httpx's own transport hands
    over one HTTP chunk at a time; ``bench/stream_bench.py`` compares them). The caller closes
    it (``get_client``'s are closed at their loop's shutdown)."""
    from .aiohttp_transport import AiohttpClient

    return AiohttpClient(
        timeout=httpx.Timeout(600.0, connect=10.0),
        limits=httpx.Limits(max_keepalive_connections=20, keepalive_expiry=30.0),
        follow_redirects=True,
    )


def preload_transport() -> None:
    """Import the transport (aiohttp's import is slow) ahead of the first client: the kernel's
    first run does this in a worker thread, not on its loop."""
    from . import aiohttp_transport  # noqa: F401


# --- closing the shared clients ------------------------------------------------------------------
# A loop has no close hook, but ``asyncio.run`` (and ``asyncio.Runner``, pytest-asyncio, …) closes
# every async generator still open on it (``shutdown_asyncgens``) before closing it: each client
# has one such generator, parked at its ``yield``, whose ``finally`` closes the client. A loop
# closed without that is swept when the next client is made (and at exit): its clients' aiohttp
# sessions are closed without the loop, which is all aiohttp needs to stay quiet.

_closers: dict[asyncio.AbstractEventLoop, list[AsyncGenerator[None, None]]] = {}


async def _closer(
    loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient
) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        if _clients.get(loop) is client:
            del _clients[loop]
        _closers.pop(loop, None)  # the loop is shutting down: let it go
        if loop.is_closed():
            _close_now(client)
        elif not client.is_closed:
            await client.aclose()


def _close_at_shutdown(loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient) -> None:
    closer = _closer(loop, client)
    step = closer.asend(None)  # the loop's firstiter hook registers it for shutdown_asyncgens
    with suppress(StopIteration):
        step.send(None)
    _closers.setdefault(loop, []).append(closer)
    global _exit_hook
    if not _exit_hook:
        _exit_hook = True
        atexit.register(_close_all_now)


def _finish(closer: AsyncGenerator[None, None]) -> None:
    """Run ``closer``'s ``finally`` now (its loop is closed: nothing in it awaits)."""
    step = closer.aclose()
    try:
        step.send(None)
    except (StopIteration, RuntimeError):
        pass
    else:
        step.close()


def _sweep_closed_loops() -> None:
    for loop in list(_closers):
        if loop.is_closed():
            for closer in _closers.pop(loop, ()):
                _finish(closer)


def _close_now(client: httpx.AsyncClient) -> None:
    from .aiohttp_transport import close_now

    close_now(client)


def _close_all_now() -> None:
    _sweep_closed_loops()
    for client in list(_clients.values()):
        _close_now(client)


_exit_hook = False


def is_loopback_url(base_url: str) -> bool:
    """Whether ``base_url`` points at this machine (local servers usually need no key)."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(
    model: Model, options: StreamOptions, *, always_required: bool = False
) -> str | None:
    """The key for a request: ``options.api_key``, else the provider's environment variable.

    A known hosted provider (or, with ``always_required``, any endpoint) that is not on this
    machine needs one: its absence is a ``ProviderError`` saying which variable to set.
    """
    key = options.api_key or get_env_api_key(model.provider)
    if key or is_loopback_url(model.base_url):
        return key
    names = " or ".join(PROVIDER_ENV_KEYS.get(model.provider, ()))
    if names:
        raise ProviderError(
            f"No API key for provider {model.provider!r}: set {names} or pass api_key="
        )
    if always_required:
        raise ProviderError(f"No API key for provider {model.provider!r}: pass api_key=")
    return None


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, else ``retry-after`` (seconds or an
    HTTP date). ``None`` when absent or unreadable."""
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _error_details(body: str) -> tuple[str | None, str | None, str | None]:
    """(message, type, code) from a JSON error body of any of the big APIs."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None, None
    if not isinstance(data, dict):
        return None, None, None
    error = data.get("error", data)
    if isinstance(error, str):
        return error, None, None
    if not isinstance(error, dict):
        return None, None, None
    message = error.get("message")
    kind = error.get("type") or error.get("status")
    code = error.get("code")
    return (
        str(message) if message is not None else None,
        str(kind) if kind is not None else None,
        str(code) if code is not None else None,
    )


def http_error(status: int, body: str) -> ProviderError:
    message, kind, code = _error_details(body)
    if message is None:
        snippet = " ".join(body.split())[:300]
        message = snippet or httpx.codes.get_reason_phrase(status) or "error"
    label = f" ({kind})" if kind else ""
    hint = ""
    if status == 401:
        hint = " — check the API key"
    elif code in _NO_RETRY_CODES or kind in _NO_RETRY_CODES:
        hint = " — the account is out of credit or quota; retrying will not help"
    text = f"HTTP {status}: {message}{label}{hint}"
    return ProviderError(text, status=status, code=code or kind, body=body)


def stream_error(payload: Mapping[str, Any]) -> ProviderError:
    """An error that arrived inside a stream (after HTTP 200); its text is scrubbed where every
    reply error is (``MessageBuilder.fail``)."""
    error = payload.get("error", payload)
    if isinstance(error, Mapping):
        message = error.get("message") or json.dumps(dict(error))
        kind = error.get("type") or error.get("code") or error.get("status")
    else:
        message, kind = str(error), None
    label = f" ({kind})" if kind else ""
    return ProviderError(f"{message}{label}", code=str(kind) if kind else None)


def _should_retry(status: int, headers: Mapping[str, str], code: str | None) -> bool:
    flag = headers.get("x-should-retry")
    if flag == "true":
        return True
    if flag == "false":
        return False
    if code in _NO_RETRY_CODES:
        return False
    return status in (408, 409, 429) or status >= 500


def _backoff(attempt: int) -> float:
    delay = min(0.5 * 2.0**attempt, 8.0)
    return delay * (1 - 0.25 * random.random())


async def _call_hook(hook: Any, *args: Any) -> Any:
    if hook is None:
        return None
    result = hook(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class _Watchdog:
    """Tracks the time since the last sign of life of a request and tells ``on_stall`` when the
    silence passes ``stall_ms`` (and again when data flows). One timer per stall period, not per
    event: an event only stores the time."""

    __slots__ = ("_handle", "_hook", "_period", "_tasks", "last", "stalled")

    def __init__(self, options: StreamOptions) -> None:
        self._hook = options.on_stall
        self._period = max(options.stall_ms, 1) / 1000
        self._handle: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.last = time.monotonic()
        self.stalled = False
        if self._hook is not None:
            self._handle = asyncio.get_running_loop().call_later(self._period, self._check)

    def waited(self) -> float:
        return time.monotonic() - self.last

    def alive(self) -> None:
        self.last = time.monotonic()
        if self.stalled:
            self.stalled = False
            self._notify(False)

    def _check(self) -> None:
        waited = self.waited()
        if waited >= self._period * 0.999:
            self.stalled = True
            self._notify(True, waited)
            delay = self._period
        else:
            delay = self._period - waited
        self._handle = asyncio.get_running_loop().call_later(delay, self._check)

    def _notify(self, stalled: bool, waited: float | None = None) -> None:
        notice = StallNotice(stalled=stalled, waited_ms=round((waited or self.waited()) * 1000))
        try:
            result = self._hook(notice) if self._hook is not None else None
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._done)
        except Exception:
            _log.exception("on_stall failed")

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("on_stall failed", exc_info=task.exception())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.stalled:
            self.stalled = False
            self._notify(False)


def _timeout_error(exc: httpx.TimeoutException, waited: float, url: str) -> ProviderError:
    kind = "read timeout" if isinstance(exc, httpx.ReadTimeout) else type(exc).__name__
    return ProviderError(
        f"The server at {url} sent nothing for {waited:.1f} s ({kind}); the reply is incomplete"
    )


def _body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive. Without a content encoding that is the response's own
    stream: ``aiter_bytes`` adds two generators and a decoder call per HTTP chunk, and servers
    flush every event as a chunk of its own (``bench.stream_bench --instructions``)."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("identity", "") and isinstance(response.stream, httpx.AsyncByteStream):
        response.is_stream_consumed = True
        return response.stream.__aiter__()
    return response.aiter_bytes()


async def _sse_events(
    response: httpx.Response, watchdog: _Watchdog, url: str
) -> AsyncIterator[ServerSentEvent]:
    """The response's events, telling ``watchdog`` of each read that completed one; a read
    timeout says how long it waited."""
    try:
        decoder = SSEDecoder()  # an event stream is UTF-8 whatever its charset says
        feed = decoder.feed
        async for chunk in _body(response):
            events = feed(chunk)
            if events:
                watchdog.last = monotonic()  # ``watchdog.alive()``, inlined: once per event
                if watchdog.stalled:
                    watchdog.alive()
                for event in events:
                    yield event
        for event in decoder.finish():
            yield event
    except httpx.TimeoutException as exc:
        raise _timeout_error(exc, watchdog.waited(), url) from None
    finally:
        watchdog.stop()


@asynccontextmanager
async def _scrubbing(redactor: Redactor) -> AsyncIterator[None]:
    """Every ``ProviderError`` leaving the block, message and body, scrubbed of the request's
    credentials (servers echo them; URLs carry passwords)."""
    try:
        yield
    except ProviderError as error:
        raise ProviderError(
            redactor.scrub(str(error)),
            status=error.status,
            code=error.code,
            body=redactor.scrub(error.body),
        ) from None


@asynccontextmanager
async def open_sse(
    model: Model,
    options: StreamOptions,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
    *,
    api_key: str | None = None,
) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
    """POST ``payload`` and yield the response's SSE events, retrying failures that happen before
    the body starts (429/5xx/overloaded/connection errors), honouring ``retry-after-ms``,
    ``retry-after`` and ``x-should-retry``, capped by ``options.max_retry_delay_ms``.

    Every ``ProviderError`` that leaves it, message and body, is scrubbed of the request's
    credentials (servers echo them; URLs carry passwords); ``options.on_stall`` hears of
    silences longer than ``options.stall_ms`` (waiting for headers or for events), and a read
    timeout says how long the server was silent."""
    redactor = Redactor.for_request(
        api_keys=[api_key, options.api_key],
        model_headers={**(model.headers or {}), **headers},
        call_headers=options.headers,
        urls=[url, model.base_url],
    )
    async with _scrubbing(redactor):
        replaced = await _call_hook(options.on_payload, payload, model)
        if replaced is not None:
            payload = replaced
        body = json.dumps(payload).encode()
        all_headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **(model.headers or {}),
            **headers,
            **(options.headers or {}),
        }
        timeout = None
        if options.timeout_ms is not None:
            seconds = options.timeout_ms / 1000
            timeout = httpx.Timeout(seconds, connect=min(seconds, 10.0))
        client = options.http_client or get_client()
        cap = options.max_retry_delay_ms / 1000 if options.max_retry_delay_ms else None
        attempt = 0
        while True:
            request = client.build_request("POST", url, content=body, headers=all_headers)
            if timeout is not None:
                request.extensions["timeout"] = timeout.as_dict()
            watchdog = _Watchdog(options)
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                watchdog.stop()
                if attempt >= options.max_retries:
                    if isinstance(exc, httpx.ReadTimeout):
                        raise _timeout_error(exc, watchdog.waited(), url) from None
                    raise ProviderError(
                        f"Connection to {url} failed: {exc or type(exc).__name__}"
                    ) from None
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            except BaseException:
                watchdog.stop()
                raise
            watchdog.alive()
            try:
                await _call_hook(
                    options.on_response, ResponseInfo(response.status_code, response.headers), model
                )
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    error = http_error(response.status_code, text)
                    if attempt >= options.max_retries or not _should_retry(
                        response.status_code, response.headers, error.code
                    ):
                        raise error
                    wait = parse_retry_after(response.headers)
                    if wait is None or wait <= 0:
                        wait = _backoff(attempt)
                    elif cap is not None and wait > cap:
                        raise ProviderError(
                            f"{error} (the server asked to retry after {wait:.0f} s, more than "
                            f"max_retry_delay_ms={options.max_retry_delay_ms})",
                            status=error.status,
                            code=error.code,
                            body=error.body,
                        )
                elif "text/event-stream" not in response.headers.get("content-type", ""):
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    message, _kind, _code = _error_details(text)
                    raise ProviderError(
                        f"Expected an event stream, got {response.headers.get('content-type')!r}: "
                        f"{message or ' '.join(text.split())[:300]}",
                        status=response.status_code,
                        body=text,
                    )
                else:
                    events = _sse_events(response, watchdog, url)
                    try:
                        yield events
                    finally:
                        await events.aclose()  # type: ignore[attr-defined]
                    return
            finally:
                watchdog.stop()
                await response.aclose()
            await asyncio.sleep(wait)
            attempt += 1
