"""The shared HTTP layer over a real loopback socket: SSE framing, retries, errors."""

from __future__ import annotations

import gzip

import pytest

from pi_notebook.ai import Model
from pi_notebook.ai.http import ProviderError, open_sse, parse_retry_after
from pi_notebook.ai.options import StreamOptions
from tests.loopback import LoopbackServer, Reply

MODEL = Model(id="m", api="openai-completions", provider="test")


async def collect(server: LoopbackServer, **options) -> list[str]:  # type: ignore[no-untyped-def]
    opts = StreamOptions(**options)
    async with open_sse(MODEL, opts, server.url + "/v1/x", {}, {"q": 1}) as events:
        return [e.data async for e in events]


async def test_sse_lines_split_on_cr_lf_only_never_on_u2028() -> None:
    async with LoopbackServer() as server:
        payload = '{"t": "a\u2028b\u2029c\u0085d"}'.encode()
        server.add(
            Reply.sse(
                [
                    b"data: " + payload[:9],
                    payload[9:] + b"\r",
                    b"\n\r\n",
                    b": keep-alive\n\n",
                    b"data: x\rdata: y\r\n\r\n",
                ]
            )
        )
        data = await collect(server)
    assert data == ['{"t": "a\u2028b\u2029c\u0085d"}', "x\ny"]
    assert server.requests[0].json() == {"q": 1}


async def test_a_gzip_encoded_event_stream_is_decoded() -> None:
    """Identity bodies are read from httpx's stream directly; an encoded one still goes through
    httpx's decoders (the body is split inside the compressed bytes)."""
    body = 'data: {"t": "é"}\n\nevent: x\ndata: two\n\n'.encode()
    packed = gzip.compress(body)
    async with LoopbackServer() as server:
        server.add(
            Reply.sse([packed[:7], packed[7:20], packed[20:]], headers={"content-encoding": "gzip"})
        )
        data = await collect(server)
    assert data == ['{"t": "é"}', "two"]


async def test_retries_429_with_retry_after_ms_then_succeeds() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply.json(
                429,
                {"error": {"message": "slow down", "code": "rate_limit_exceeded"}},
                headers={"retry-after-ms": "10"},
            ),
            Reply.json(500, "oops"),
            Reply.sse([b"data: ok\n\n"]),
        )
        assert await collect(server) == ["ok"]
        assert len(server.requests) == 3


async def test_insufficient_quota_and_401_are_not_retried() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply.json(
                429,
                {
                    "error": {
                        "message": "You exceeded your current quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            )
        )
        with pytest.raises(ProviderError, match="quota") as info:
            await collect(server)
        assert info.value.status == 429 and len(server.requests) == 1
        server.add(Reply.json(401, {"error": {"message": "Invalid API Key"}}))
        with pytest.raises(ProviderError, match=r"HTTP 401: Invalid API Key.*API key"):
            await collect(server)
        assert len(server.requests) == 2


async def test_x_should_retry_false_wins() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.json(503, "busy", headers={"x-should-retry": "false"}))
        with pytest.raises(ProviderError, match="HTTP 503"):
            await collect(server)
        assert len(server.requests) == 1


async def test_retry_after_beyond_cap_fails_with_a_clear_message() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.json(429, "wait", headers={"retry-after": "120"}))
        with pytest.raises(ProviderError, match="max_retry_delay_ms"):
            await collect(server, max_retry_delay_ms=1000)


async def test_non_json_error_body_is_kept_and_key_redacted() -> None:
    async with LoopbackServer() as server:
        server.add(
            Reply(
                status=502,
                headers={"content-type": "text/html"},
                chunks=[b"<html>bad gateway sk-secret-123</html>"],
            )
        )
        with pytest.raises(ProviderError) as info:
            async with open_sse(
                MODEL, StreamOptions(max_retries=0), server.url, {}, {}, api_key="sk-secret-123"
            ) as events:
                [e async for e in events]
        assert "bad gateway" in str(info.value) and "sk-secret-123" not in str(info.value)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_api_key_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_notebook.ai.http import is_loopback_url, resolve_api_key

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    hosted = Model(id="m", api="openai-responses", provider="openai", base_url="https://x.ai/v1")
    local = hosted.model_copy(update={"base_url": "http://127.0.0.1:8080/v1"})
    custom = hosted.model_copy(update={"provider": "my-proxy"})
    with pytest.raises(ProviderError, match="set OPENAI_API_KEY"):
        resolve_api_key(hosted, StreamOptions())
    assert resolve_api_key(hosted, StreamOptions(api_key="sk-1")) == "sk-1"
    assert resolve_api_key(local, StreamOptions()) is None
    assert resolve_api_key(custom, StreamOptions()) is None
    with pytest.raises(ProviderError, match="pass api_key="):
        resolve_api_key(custom, StreamOptions(), always_required=True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert resolve_api_key(hosted, StreamOptions()) == "sk-env"
    assert is_loopback_url("http://localhost:1/v1") and is_loopback_url("http://[::1]:2")
    assert not is_loopback_url("https://api.openai.com/v1")
