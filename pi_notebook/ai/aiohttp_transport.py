"""httpx's API over aiohttp's HTTP/1.1 client: the transport of the providers' shared client
(``http.get_client``; a caller may hand in any client of its own, ``StreamOptions.http_client``).

Why: aiohttp's C parser undoes the chunked framing and hands over whatever has arrived, many SSE
events per read, where httpx's own transport (h11) hands over one HTTP chunk — one event — at a
time, through several generator layers. On a loopback stream of small events that is most of
the time per event (``bench/stream_bench.py``).

``AiohttpClient`` is an ``httpx.AsyncClient`` whose direct transport and whose proxy transports
(``proxy=`` or ``HTTP(S)_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` from the environment, chosen by
httpx exactly as with its own transport) are ``SafeAiohttpTransport``; a SOCKS proxy, which
aiohttp does not speak, gets httpx's own transport. ``SafeAiohttpTransport`` is
``httpx_aiohttp.AiohttpTransport`` (its TLS context, limits and proxy settings) with its own
request and body handling:

- aiohttp's errors become the httpx errors the providers handle (``ConnectError``,
  ``ConnectTimeout``, ``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``, ``ProxyError``,
  …) with texts made here, never aiohttp's own: those can carry the request's URL, and their
  ``repr`` its headers. The aiohttp error is neither chained nor kept as the context.
- A URL's user and password are taken out before aiohttp sees it (httpx has already turned them
  into an ``Authorization`` header); a proxy's reach aiohttp as a header, never in its URL.
- aiohttp's own cookie jar, proxy lookup and decompression are off: httpx does those.
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport
from yarl import URL

__all__ = ["AiohttpClient", "SafeAiohttpTransport", "close_now"]

_INCOMPLETE = "peer closed connection without sending complete message body"


class AiohttpClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` on ``SafeAiohttpTransport`` (direct and through HTTP(S) proxies)."""

    def _init_transport(
        self,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(),  # noqa: B008
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> httpx.AsyncBaseTransport:
        if transport is not None:
            return transport
        return SafeAiohttpTransport(verify=verify, cert=cert, trust_env=trust_env, limits=limits)

    def _init_proxy_transport(
        self,
        proxy: httpx.Proxy,
        verify: ssl.SSLContext | str | bool = True,
        cert: Any = None,
        trust_env: bool = True,
        http1: bool = True,
        http2: bool = False,
        limits: httpx.Limits = httpx.Limits(),  # noqa: B008
    ) -> httpx.AsyncBaseTransport:
        if proxy.url.scheme not in ("http", "https"):  # socks5, socks5h: not in aiohttp
            return super()._init_proxy_transport(
                proxy, verify=verify, cert=cert, trust_env=trust_env, limits=limits
            )
        return SafeAiohttpTransport(
            verify=verify, cert=cert, trust_env=trust_env, limits=limits, proxy=proxy
        )


class SafeAiohttpTransport(AiohttpTransport):
    """``httpx_aiohttp.AiohttpTransport`` with httpx's error types and secret-free texts."""

    _proxy_url: str | None = None
    _proxy_headers: list[tuple[str, str]] | None = None

    def get_client(self) -> aiohttp.ClientSession:
        proxy = self.proxy
        if proxy is not None:
            self._proxy_url = str(proxy.url)  # httpx.Proxy has moved any userinfo to .auth
            headers = proxy.headers.multi_items()
            credentials = proxy.raw_auth
            if credentials is not None:
                # aiohttp moves a proxy request's Authorization to Proxy-Authorization: on the
                # CONNECT of an https:// request, on the request itself for an http:// one.
                token = base64.b64encode(b":".join(credentials)).decode("ascii")
                headers.append(("Authorization", f"Basic {token}"))
            self._proxy_headers = headers
        limits = self.limits
        connector = aiohttp.TCPConnector(
            ssl=self.ssl_context,
            limit=limits.max_connections or 0,
            keepalive_timeout=limits.keepalive_expiry,
        )
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),  # httpx keeps the cookies
            trust_env=False,  # httpx picks the proxy (and NO_PROXY) from the environment
            auto_decompress=False,  # httpx decodes gzip etc.
            skip_auto_headers=("Content-Type",),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self.client
        if not isinstance(session, aiohttp.ClientSession):
            session = self.client = self.get_client()
        timeout = request.extensions.get("timeout", {})
        url = request.url
        if url.userinfo:  # httpx has made the Authorization header of it
            url = url.copy_with(username=None, password=None)
        data: Any
        try:
            data = request.content or None
        except httpx.RequestNotRead:
            data = request.stream
            request.headers.pop("transfer-encoding", None)  # aiohttp frames the body itself
        error: httpx.TransportError
        try:
            response = await session.request(
                request.method,
                URL(str(url), encoded=True),  # httpx has percent-encoded it: sent as it is
                headers=request.headers.multi_items(),
                data=data,
                allow_redirects=False,
                compress=False,
                timeout=aiohttp.ClientTimeout(
                    connect=timeout.get("pool"),
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                ),
                server_hostname=request.extensions.get("sni_hostname"),
                proxy=self._proxy_url,
                proxy_headers=self._proxy_headers,
            )
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
            error = _httpx_error(exc, request, reading=False)
        else:
            extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
            if response.reason:
                extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
            return httpx.Response(
                status_code=response.status,
                headers=response.raw_headers,
                stream=_Body(response, request),
                request=request,
                extensions=extensions,
            )
        raise error from None  # outside the except clause: not even the context is kept

    async def aclose(self) -> None:
        if isinstance(self.client, aiohttp.ClientSession):
            await self.client.close()

    def close_now(self) -> None:
        """Close the session's connections without the event loop (a closed loop, exit)."""
        session = self.client
        if isinstance(session, aiohttp.ClientSession) and not session.closed:
            connector = session.connector
            if connector is not None:
                connector._close()  # the synchronous part of ``connector.close()``
            session.detach()


class _Body(httpx.AsyncByteStream):
    """The response body as aiohttp hands it over: all that has arrived, per read."""

    __slots__ = ("_request", "_response")

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = self._response.content.readany
        error: httpx.TransportError
        try:
            while chunk := await read():
                yield chunk
            return
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            error = _httpx_error(exc, self._request, reading=True)
        raise error from None

    async def aclose(self) -> None:
        response = self._response
        response.release()  # an unfinished body closes the connection; a finished one is pooled
        error: httpx.TransportError
        try:
            await response.wait_for_close()
            return
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            error = _httpx_error(exc, self._request, reading=True)
        raise error from None


def _httpx_error(
    exc: BaseException, request: httpx.Request, *, reading: bool
) -> httpx.TransportError:
    """The httpx error for aiohttp's ``exc`` (``reading``: while reading the body), with a text
    that names no URL or header: the OS's words, a status line, or a fixed sentence."""
    kind: type[httpx.TransportError]
    text = ""
    if isinstance(exc, aiohttp.ClientHttpProxyError):  # the proxy refused the tunnel
        kind, text = httpx.ProxyError, f"The proxy answered {exc.status} {exc.message}".strip()
    elif isinstance(exc, aiohttp.ClientProxyConnectionError):
        kind, text = httpx.ProxyError, f"Cannot connect to the proxy: {_os_text(exc.os_error)}"
        text = text.rstrip(": ")
    elif isinstance(exc, aiohttp.ClientConnectorCertificateError):
        kind, text = httpx.ConnectError, " ".join(str(exc.certificate_error).split())[:300]
    elif isinstance(exc, aiohttp.ClientConnectorError):  # DNS, refused, unreachable, TLS
        kind, text = httpx.ConnectError, _os_text(exc.os_error)
    elif isinstance(exc, aiohttp.ServerFingerprintMismatch):
        kind, text = httpx.ConnectError, "The server's certificate fingerprint does not match"
    elif isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(exc, TimeoutError):  # SocketTimeoutError: the read timeout
        read = reading or isinstance(exc, aiohttp.SocketTimeoutError)
        kind = httpx.ReadTimeout if read else httpx.ConnectTimeout
    elif isinstance(exc, aiohttp.ClientPayloadError):  # a cut (or malformed) body
        kind = httpx.RemoteProtocolError
        text = _INCOMPLETE if "not completed" in str(exc) else "The response body is malformed"
    elif isinstance(exc, aiohttp.ServerDisconnectedError):
        kind = httpx.RemoteProtocolError
        text = _INCOMPLETE if reading else "Server disconnected without sending a response."
    elif isinstance(exc, aiohttp.ClientResponseError):  # a malformed status line or header
        kind, text = httpx.RemoteProtocolError, "The server sent a malformed HTTP response"
    elif isinstance(exc, aiohttp.NonHttpUrlClientError | aiohttp.InvalidURL):
        kind, text = httpx.UnsupportedProtocol, "The request URL is not an http(s) URL"
    elif isinstance(exc, OSError):  # ClientOSError, ConnectionResetError, ssl.SSLError, …
        kind = httpx.ReadError if reading else httpx.WriteError
        text = _os_text(exc) or "The connection failed"
    elif isinstance(exc, aiohttp.ClientConnectionError):  # "Connection closed", …
        kind = httpx.ReadError if reading else httpx.RemoteProtocolError
        text = "The connection closed unexpectedly"
    elif isinstance(exc, ValueError):  # aiohttp refused to send the request
        kind, text = httpx.LocalProtocolError, "The request was refused before it was sent"
    else:
        kind, text = (httpx.ReadError if reading else httpx.ConnectError), type(exc).__name__
    return kind(text, request=request)


def _os_text(exc: OSError) -> str:
    """``[Errno 111] Connect call failed ('127.0.0.1', 1)`` and the like: the OS's (or the TLS
    library's) words, an address at most. aiohttp's own OS errors can quote the URL ("Can not
    write request body for …"): those say only what their errno means."""
    reset = isinstance(exc, ConnectionResetError)
    if isinstance(exc, aiohttp.ClientError):
        if exc.errno:
            return f"[Errno {exc.errno}] {os.strerror(exc.errno)}"
        return "The connection was reset" if reset else ""
    if exc.errno is not None and exc.strerror:
        return f"[Errno {exc.errno}] {exc.strerror}"
    return " ".join(str(exc).split())[:300]


def close_now(client: httpx.AsyncClient) -> None:
    """Close ``client``'s aiohttp sessions without awaiting (their loop is closed, or the
    interpreter is exiting): aiohttp would otherwise log "Unclosed client session" for each."""
    for transport in (client._transport, *client._mounts.values()):
        if isinstance(transport, SafeAiohttpTransport):
            transport.close_now()
