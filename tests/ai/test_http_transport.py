"""The providers' HTTP: the shared client (httpx's API over aiohttp's C parser,
``pi_notebook.ai.aiohttp_transport``) and a client the caller hands in (``http_client``). Over
real loopback sockets: error texts without credentials, proxies, timeouts, abort, gzip, and
clients closed with their event loop."""

from __future__ import annotations

import asyncio
import base64
import gc
import gzip
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import time
import traceback
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp.client_reqrep import ConnectionKey, RequestInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from pi_notebook.ai import AbortController, Context, Model, UserMessage, stream
from pi_notebook.ai import http as http_layer
from pi_notebook.ai.aiohttp_transport import SafeAiohttpTransport, _httpx_error
from pi_notebook.ai.http import ProviderError, make_client, open_sse
from pi_notebook.ai.options import StreamOptions
from tests.loopback import LoopbackServer, Reply, sse_chunks

KEY = "sk-test-SECRET-key-5e1d"
HEADER_SECRET = "hdr-SECRET-9c2b"
URL_PASSWORD = "urlpw-SECRET-77"
PROXY_PASSWORD = "proxypw-SECRET-31"
SECRETS = (
    KEY,
    HEADER_SECRET,
    URL_PASSWORD,
    PROXY_PASSWORD,
    base64.b64encode(f"puser:{PROXY_PASSWORD}".encode()).decode(),
    base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode(),
)
HELLO = Context(messages=[UserMessage(content="hi")])
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def no_env_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


def everything(exc: BaseException) -> str:
    """All an exception can show: its text, repr and formatted traceback with any chain."""
    return "\n".join([str(exc), repr(exc), "".join(traceback.format_exception(exc))])


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def completions_model(base_url: str) -> Model:
    return Model(id="m", api="openai-completions", provider="custom", base_url=base_url)


def chunk(content: str, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}],
    }


@asynccontextmanager
async def raw_server(reply: bytes | None) -> AsyncIterator[int]:
    """A server that reads a request head and writes ``reply`` (``None``: nothing, ever)."""
    writers: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            await reader.readuntil(b"\r\n\r\n")
            if reply is None:
                await reader.read()
            else:
                writer.write(reply)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


# --- the client ----------------------------------------------------------------------------------


async def test_the_shared_client_is_on_aiohttp() -> None:
    client = http_layer.get_client()
    assert isinstance(client._transport, SafeAiohttpTransport)
    assert http_layer.get_client() is client  # one per event loop


async def test_a_handed_in_client_carries_every_request_and_stays_open() -> None:
    """The seam: ``StreamOptions.http_client`` (here httpx's ``MockTransport``, no server, no
    patching) is what the providers post through; the caller owns it and closes it."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = b"".join(sse_chunks([chunk("hel"), chunk("lo", "stop")]))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        model = completions_model("http://api.example.test/v1")
        reply = await stream(model, HELLO, api_key=KEY, http_client=client).result()
        assert reply.text == "hello" and reply.stop_reason == "stop"
        assert [str(r.url) for r in seen] == ["http://api.example.test/v1/chat/completions"]
        async with open_sse(
            model, StreamOptions(http_client=client), "http://api.example.test/v1/x", {}, {}
        ) as events:
            assert len([event async for event in events]) == 2
        assert len(seen) == 2 and not client.is_closed
    assert http_layer._clients.get(asyncio.get_running_loop()) is None  # none was made


@pytest.mark.parametrize(
    "api",
    ["openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"],
)
async def test_every_provider_posts_through_the_handed_in_client(api: str) -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.host)
        return httpx.Response(418, json={"error": {"message": "a teapot, not a model"}})

    model = Model(id="m", api=api, provider="custom", base_url="http://seam.example.test/v1")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        reply = await stream(model, HELLO, api_key=KEY, http_client=client).result()
    assert seen == ["seam.example.test"]
    assert reply.stop_reason == "error" and "a teapot, not a model" in (reply.error_message or "")


def test_aiohttp_is_imported_by_the_first_client_not_by_the_http_layer() -> None:
    """The structural test (tests/notebook/test_load_imports.py) lists aiohttp too; here: the
    HTTP layer itself imports it only when the first client is made."""
    code = (
        "import sys, asyncio\n"
        "from pi_notebook.ai import http\n"
        "assert 'aiohttp' not in sys.modules, 'imported with the HTTP layer'\n"
        "async def main():\n"
        "    http.get_client()\n"
        "asyncio.run(main())\n"
        "print('aiohttp' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


# --- error texts carry no credential -------------------------------------------------------------


async def test_a_refused_connection_names_no_credential() -> None:
    url = f"http://user:{URL_PASSWORD}@127.0.0.1:{closed_port()}/v1/chat/completions"
    client = http_layer.get_client()
    with pytest.raises(httpx.ConnectError) as info:
        await client.post(url, headers={"authorization": f"Bearer {KEY}", "x-t": HEADER_SECRET})
    assert_clean(everything(info.value))
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert str(info.value).startswith("[Errno 111]")
    # through a provider: the error text of the reply
    model = completions_model(f"http://user:{URL_PASSWORD}@127.0.0.1:{closed_port()}/v1")
    model = model.model_copy(update={"headers": {"x-api-key": HEADER_SECRET}})
    final = await stream(model, HELLO, api_key=KEY, max_retries=0).result()
    assert final.stop_reason == "error"
    assert "Connection to http://***@127.0.0.1" in (final.error_message or "")
    assert_clean(final.model_dump_json())


async def test_a_malformed_response_names_no_credential() -> None:
    async with raw_server(b"HTTP/1.1 2x0 OK\r\nbad header line\r\n\r\n") as port:
        client = http_layer.get_client()
        with pytest.raises(httpx.RemoteProtocolError) as info:
            await client.post(
                f"http://user:{URL_PASSWORD}@127.0.0.1:{port}/v1",
                headers={"authorization": f"Bearer {KEY}", "x-t": HEADER_SECRET},
            )
    assert_clean(everything(info.value))
    assert info.value.__cause__ is None and info.value.__context__ is None


async def test_a_cut_stream_names_no_credential_and_is_a_remote_protocol_error() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.sse([b"data: one\n\n", b"data: tw"], truncate=True))
        client = http_layer.get_client()
        url = f"http://user:{URL_PASSWORD}@127.0.0.1:{server.port}/x"
        async with client.stream("POST", url, headers={"x-api-key": KEY}) as response:
            with pytest.raises(httpx.RemoteProtocolError) as info:
                async for _ in response.aiter_bytes():
                    pass
        sent = server.requests[0].headers
    assert (
        sent["authorization"]
        == "Basic " + base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode()
    )
    assert "peer closed connection without sending complete message body" in str(info.value)
    assert_clean(everything(info.value))


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "ALL_PROXY", "http_proxy"])
async def test_an_unreachable_proxy_names_no_proxy_password(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, f"http://puser:{PROXY_PASSWORD}@127.0.0.1:{closed_port()}")
    client = http_layer.get_client()
    with pytest.raises(httpx.TransportError) as info:  # ConnectError, ProxyError on aiohttp
        await client.post("http://upstream.invalid/v1", headers={"x-api-key": KEY})
    assert_clean(everything(info.value))
    final = await stream(
        completions_model("http://upstream.invalid/v1"), HELLO, api_key=KEY, max_retries=0
    ).result()
    assert final.stop_reason == "error" and "Connection to" in (final.error_message or "")
    assert_clean(final.model_dump_json())


@pytest.mark.parametrize("no_proxy", [False, True])
async def test_env_proxies_are_used_with_their_credentials(
    no_proxy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY from the environment: an absolute-form request to the proxy with
    Proxy-Authorization from the proxy URL's userinfo; NO_PROXY bypasses it. The same on both
    transports (httpx picks the proxy for either)."""
    body = sse_chunks([chunk("proxied", "stop")], done=True)
    async with LoopbackServer() as proxy, LoopbackServer() as upstream:
        monkeypatch.setenv("HTTP_PROXY", f"http://puser:{PROXY_PASSWORD}@127.0.0.1:{proxy.port}")
        if no_proxy:
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        (upstream if no_proxy else proxy).add(Reply.sse(body))
        base = f"http://127.0.0.1:{upstream.port}/v1"
        final = await stream(completions_model(base), HELLO, api_key=KEY).result()
    assert final.stop_reason == "stop" and final.content[0].text == "proxied"  # type: ignore[union-attr]
    if no_proxy:
        assert proxy.requests == [] and upstream.requests[0].path == "/v1/chat/completions"
        return
    assert upstream.requests == []
    seen = proxy.requests[0]
    assert seen.path == f"{base}/chat/completions"
    credentials = base64.b64encode(f"puser:{PROXY_PASSWORD}".encode()).decode()
    assert seen.headers["proxy-authorization"] == f"Basic {credentials}"
    assert seen.headers["authorization"] == f"Bearer {KEY}"


async def test_a_socks_proxy_gets_httpx_own_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    """aiohttp speaks no SOCKS: such a proxy is mounted on httpx's transport (which needs
    socksio, exactly as without aiohttp); HTTP(S) proxies on aiohttp's."""
    made: list[httpx.Proxy] = []

    def httpx_proxy_transport(self: Any, proxy: httpx.Proxy, **_: Any) -> httpx.AsyncBaseTransport:
        made.append(proxy)
        return httpx.MockTransport(lambda request: httpx.Response(204))

    monkeypatch.setattr(httpx.AsyncClient, "_init_proxy_transport", httpx_proxy_transport)
    monkeypatch.setenv("ALL_PROXY", "socks5://puser:pw@127.0.0.1:1080")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    client = make_client()
    try:
        kinds = {str(p.pattern): type(t).__name__ for p, t in client._mounts.items()}
        assert kinds == {"all://": "MockTransport", "https://": "SafeAiohttpTransport"}
        assert [str(p.url) for p in made] == ["socks5://127.0.0.1:1080"]
    finally:
        await client.aclose()


def _request_info(url: str) -> RequestInfo:
    headers = CIMultiDictProxy(
        CIMultiDict({"Authorization": f"Bearer {KEY}", "x-t": HEADER_SECRET})
    )
    return RequestInfo(URL(url), "POST", headers, URL(url))


def test_every_aiohttp_error_maps_to_an_httpx_error_without_its_text() -> None:
    """aiohttp's errors quote the URL (with its password) and, in their repr, the request's
    headers: none of that reaches the httpx error."""
    url = f"http://user:{URL_PASSWORD}@proxy.example:3128/{KEY}"
    info = _request_info(url)
    key = ConnectionKey("h", 1, False, True, URL(url), None, None)  # type: ignore[arg-type]
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 1)")
    cases: list[tuple[BaseException, bool, type[httpx.TransportError]]] = [
        (aiohttp.ClientConnectorError(key, refused), False, httpx.ConnectError),
        (aiohttp.ClientProxyConnectionError(key, refused), False, httpx.ProxyError),
        (
            aiohttp.ClientHttpProxyError(info, (), status=407, message="Auth"),
            False,
            httpx.ProxyError,
        ),
        (
            aiohttp.ConnectionTimeoutError(f"Connection timeout to host {url}"),
            False,
            httpx.ConnectTimeout,
        ),
        (
            aiohttp.SocketTimeoutError("Timeout on reading data from socket"),
            False,
            httpx.ReadTimeout,
        ),
        (aiohttp.SocketTimeoutError(url), True, httpx.ReadTimeout),
        (TimeoutError(), True, httpx.ReadTimeout),
        (
            aiohttp.ClientPayloadError(f"Response payload is not completed {url}"),
            True,
            httpx.RemoteProtocolError,
        ),
        (aiohttp.ServerDisconnectedError(), False, httpx.RemoteProtocolError),
        (aiohttp.ServerDisconnectedError(), True, httpx.RemoteProtocolError),
        (
            aiohttp.ClientResponseError(info, (), status=400, message=f"bad {KEY}"),
            False,
            httpx.RemoteProtocolError,
        ),
        (aiohttp.InvalidURL(url), False, httpx.UnsupportedProtocol),
        (aiohttp.NonHttpUrlClientError(url), False, httpx.UnsupportedProtocol),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), True, httpx.ReadError),
        (aiohttp.ClientConnectionResetError(f"Cannot write {url}"), False, httpx.WriteError),
        (aiohttp.ClientConnectionError(f"Connection closed {url}"), True, httpx.ReadError),
        (ValueError(f"Cannot combine AUTHORIZATION header {KEY}"), False, httpx.LocalProtocolError),
    ]
    request = httpx.Request("POST", "http://127.0.0.1/x")
    for exc, reading, kind in cases:
        assert any(s in everything(exc) for s in SECRETS) or isinstance(
            exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError | asyncio.TimeoutError
        )
        mapped = _httpx_error(exc, request, reading=reading)
        assert type(mapped) is kind, (exc, mapped)
        assert mapped.request is request
        assert_clean(everything(mapped))
    refused_text = str(
        _httpx_error(aiohttp.ClientConnectorError(key, refused), request, reading=False)
    )
    assert refused_text == "[Errno 111] Connect call failed ('127.0.0.1', 1)"


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no CA signed (openssl), and its key."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1"
    command += " -addext subjectAltName=IP:127.0.0.1"
    subprocess.run(
        [*command.split(), "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


class TlsLoopbackServer(LoopbackServer):
    def __init__(self, cert: Path, key: Path) -> None:
        super().__init__()
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    async def __aenter__(self) -> TlsLoopbackServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self


async def test_https_with_an_untrusted_certificate_is_a_connect_error(
    self_signed: tuple[Path, Path],
) -> None:
    async with TlsLoopbackServer(*self_signed) as server:
        client = http_layer.get_client()
        url = f"https://user:{URL_PASSWORD}@127.0.0.1:{server.port}/v1"
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED") as info:
            await client.post(url, headers={"authorization": f"Bearer {KEY}"})
        assert server.requests == []
    assert_clean(everything(info.value))
    assert info.value.__cause__ is None and info.value.__context__ is None


async def test_https_streams_with_a_certificate_trusted_through_ssl_cert_file(
    self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(self_signed[0]))
    body = sse_chunks([chunk("over "), chunk("TLS", "stop")], done=True)
    async with TlsLoopbackServer(*self_signed) as server:
        server.add(Reply.sse(body), Reply.sse(body))
        for _ in range(2):  # the second request reuses the TLS connection
            final = await stream(completions_model(server.url + "/v1"), HELLO, api_key=KEY).result()
            assert final.stop_reason == "stop", final.error_message
            assert final.content[0].text == "over TLS"  # type: ignore[union-attr]
    assert server.requests[1].headers["authorization"] == f"Bearer {KEY}"


@asynccontextmanager
async def tunnel_proxy(answer: bytes = b"") -> AsyncIterator[tuple[int, list[dict[str, str]]]]:
    """An HTTP proxy that tunnels ``CONNECT host:port`` (or answers ``answer`` to it): its port
    and the headers of each CONNECT it got."""
    seen: list[dict[str, str]] = []
    tasks: set[asyncio.Task[None]] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = head[0].split(" ", 2)
        fields = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
        seen.append({k.lower(): v for k, v in fields.items()} | {":method": method})
        if answer or method != "CONNECT":
            writer.write(answer or b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        host, port = target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        for task in (pipe(reader, up_writer), pipe(up_reader, writer)):
            tasks.add(asyncio.ensure_future(task))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1]), seen
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def test_https_through_an_env_proxy_tunnels_with_its_credentials(
    self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTPS_PROXY: a CONNECT with Proxy-Authorization, then TLS to the server through the
    tunnel; the server never sees the proxy's credentials."""
    monkeypatch.setenv("SSL_CERT_FILE", str(self_signed[0]))
    body = sse_chunks([chunk("tunnelled", "stop")], done=True)
    async with TlsLoopbackServer(*self_signed) as server, tunnel_proxy() as (port, seen):
        monkeypatch.setenv("HTTPS_PROXY", f"http://puser:{PROXY_PASSWORD}@127.0.0.1:{port}")
        server.add(Reply.sse(body))
        final = await stream(completions_model(server.url + "/v1"), HELLO, api_key=KEY).result()
        assert final.stop_reason == "stop", final.error_message
        assert final.content[0].text == "tunnelled"  # type: ignore[union-attr]
    credentials = base64.b64encode(f"puser:{PROXY_PASSWORD}".encode()).decode()
    assert [s[":method"] for s in seen] == ["CONNECT"]
    assert seen[0]["proxy-authorization"] == f"Basic {credentials}"
    assert "authorization" not in seen[0]  # the API key goes through the tunnel only
    assert "proxy-authorization" not in server.requests[0].headers
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_a_proxy_refusing_the_tunnel_is_a_proxy_error_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refusal = b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n"
    async with tunnel_proxy(refusal) as (port, seen):
        monkeypatch.setenv("HTTPS_PROXY", f"http://puser:{PROXY_PASSWORD}@127.0.0.1:{port}")
        client = http_layer.get_client()
        with pytest.raises(httpx.ProxyError, match="407") as info:
            await client.post("https://api.example.invalid/v1", headers={"x-api-key": KEY})
        final = await stream(
            completions_model("https://api.example.invalid/v1"), HELLO, api_key=KEY, max_retries=0
        ).result()
    assert seen and all(s[":method"] == "CONNECT" for s in seen)
    assert_clean(everything(info.value))
    assert info.value.__cause__ is None and info.value.__context__ is None
    assert final.stop_reason == "error" and "407" in (final.error_message or "")
    assert_clean(final.model_dump_json())


# --- timeouts, abort, gzip -----------------------------------------------------------------------


async def test_a_server_that_never_answers_is_a_read_timeout() -> None:
    async with raw_server(None) as port:
        url = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"sent nothing for 0\.[3-9] s \(read timeout\)"):
            async with open_sse(
                completions_model(url), StreamOptions(timeout_ms=300, max_retries=0), url, {}, {}
            ) as events:
                [e async for e in events]
        assert time.monotonic() - started < 5


async def test_a_stream_that_goes_silent_is_a_read_timeout() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.sse(sse_chunks([chunk("Hel")]), hang=True))
        started = time.monotonic()
        final = await stream(
            completions_model(server.url + "/v1"), HELLO, timeout_ms=300, max_retries=0
        ).result()
    assert time.monotonic() - started < 5
    assert final.stop_reason == "error" and final.content[0].text == "Hel"  # type: ignore[union-attr]
    assert "(read timeout)" in (final.error_message or "")


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
async def test_abort_mid_stream_ends_it_at_once_and_closes_the_connection(api: str) -> None:
    if api == "anthropic-messages":
        events = [
            {"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Once"},
            },
        ]
        body = sse_chunks(events, event_names=True)
    else:
        body = sse_chunks([chunk("Once")])
    controller = AbortController()
    async with LoopbackServer() as server:
        server.add(Reply.sse(body, hang=True))
        model = Model(id="m", api=api, provider="custom", base_url=server.url + "/v1")  # type: ignore[arg-type]
        reply = stream(model, HELLO, api_key=KEY, signal=controller.signal)
        async for event in reply:
            if event.type == "text_delta":
                started = time.monotonic()
                controller.abort()
        final = await reply.result()
        assert time.monotonic() - started < 0.5
        await asyncio.wait_for(server.disconnected.wait(), 5)
    assert final.stop_reason == "aborted" and final.content[0].text == "Once"  # type: ignore[union-attr]


async def test_abort_while_waiting_for_the_headers_ends_the_request_at_once() -> None:
    controller = AbortController()
    async with raw_server(None) as port:
        model = completions_model(f"http://127.0.0.1:{port}/v1")
        reply = stream(model, HELLO, api_key=KEY, signal=controller.signal)
        asyncio.get_running_loop().call_later(0.2, controller.abort)
        started = time.monotonic()
        final = await reply.result()
        assert time.monotonic() - started < 1.5
    assert final.stop_reason == "aborted" and final.error_message == "Request was aborted"


async def test_a_large_gzip_stream_is_decoded() -> None:
    text = "".join(f"part {i} é ☕ " for i in range(3000))
    pieces = [text[i : i + 50] for i in range(0, len(text), 50)]
    raw = b"".join(sse_chunks([chunk(p) for p in pieces] + [chunk("", "stop")], done=True))
    packed = gzip.compress(raw)
    async with LoopbackServer() as server:
        split = [packed[i : i + 1000] for i in range(0, len(packed), 1000)]
        server.add(Reply.sse(split, headers={"content-encoding": "gzip"}))
        final = await stream(completions_model(server.url + "/v1"), HELLO).result()
        assert "gzip" in server.requests[0].headers["accept-encoding"]
    assert final.stop_reason == "stop" and final.content[0].text == text  # type: ignore[union-attr]


# --- closing -------------------------------------------------------------------------------------


async def _one_request(url: str) -> httpx.AsyncClient:
    client = http_layer.get_client()
    async with open_sse(completions_model(url), StreamOptions(), url + "/x", {}, {}) as events:
        assert [e.data async for e in events] == ["ok"]
    return client


async def _one_loopback_request() -> httpx.AsyncClient:
    """One streamed request to a fresh loopback server; the shared client it went through."""
    async with LoopbackServer() as server:
        server.add(Reply.sse([b"data: ok\n\n"]))
        return await _one_request(server.url)


def _sessions(client: httpx.AsyncClient) -> list[aiohttp.ClientSession]:
    transports = [client._transport, *client._mounts.values()]
    return [t.client for t in transports if isinstance(t, SafeAiohttpTransport) and t.client]  # type: ignore[misc]


@pytest.fixture
def quiet() -> Iterator[list[str]]:
    """Warnings and asyncio's error log lines ("Unclosed client session", …) while it is on."""
    seen: list[str] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Catch(logging.WARNING)
    logging.getLogger("asyncio").addHandler(handler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield seen
        gc.collect()
    logging.getLogger("asyncio").removeHandler(handler)
    seen.extend(str(w.message) for w in caught)


def test_the_client_is_closed_when_its_loop_shuts_down(quiet: list[str]) -> None:
    client = asyncio.run(_one_loopback_request())
    assert client.is_closed
    sessions = _sessions(client)
    assert len(sessions) == 1
    assert all(s.closed for s in sessions)
    assert client not in http_layer._clients.values()
    gc.collect()
    assert quiet == []


def test_a_loop_closed_without_shutdown_is_swept_by_the_next_client(quiet: list[str]) -> None:
    loop = asyncio.new_event_loop()
    try:
        first = loop.run_until_complete(_one_loopback_request())
    finally:
        loop.close()  # no shutdown_asyncgens: the client's closer never ran
    assert not all(s.closed for s in _sessions(first))
    second = asyncio.run(_one_loopback_request())  # its get_client sweeps the closed loop
    assert all(s.closed for s in _sessions(first) + _sessions(second))
    assert loop not in http_layer._closers
    del loop
    gc.collect()
    assert quiet == []


@pytest.mark.parametrize("ending", ["asyncio.run", "loop left open", "loop closed"])
def test_nothing_is_left_unclosed_at_exit(ending: str, tmp_path: Path) -> None:
    """A whole process under ``-W error`` and asyncio's debug mode, its loop ended each way, then
    what the exit hook does (``_close_all_now``), every reference the HTTP layer holds dropped and
    a collection: aiohttp reports a session or connector left open when it is collected (through
    the loop's exception handler), and nothing says so."""
    script = textwrap.dedent(
        f"""
        import asyncio, gc
        from pi_notebook.ai import http
        from tests.loopback import LoopbackServer, Reply
        from tests.ai.test_http_transport import _one_request

        async def main():
            async with LoopbackServer() as server:
                server.add(Reply.sse([b"data: ok\\n\\n"]))
                await _one_request(server.url)

        ending = {ending!r}
        if ending == "asyncio.run":
            asyncio.run(main())
        else:
            loop = asyncio.new_event_loop()
            loop.run_until_complete(main())
            if ending == "loop closed":
                loop.close()
        http._close_all_now()  # atexit's
        http._clients.clear()
        http._closers.clear()
        gc.collect()
        print("done")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    for aiohttp_says in ("Unclosed client session", "Unclosed connector", "Unclosed response"):
        assert aiohttp_says not in done.stderr, done.stderr
