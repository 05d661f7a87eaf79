"""Credentials never reach an error text, a stream's final message, a cassette or a log line.

Every path over a real loopback server: the server echoes what the client sent (its key, its
credential headers, the URL's userinfo) in the places real servers and proxies do — a malformed
stream line, an error body, a connection error quoting the URL — and the test looks for the
secret in everything the failure produced.
"""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import Context, Model, UserMessage, stream
from pi_notebook.ai.cassette import Cassette
from pi_notebook.ai.http import ProviderError, open_sse
from pi_notebook.ai.options import StreamOptions
from pi_notebook.ai.redaction import Redactor, is_credential_header
from tests.loopback import LoopbackServer, Reply, sse_chunks

KEY = "sk-test-SECRET-4f9a2c7e1b"
HEADER_SECRET = "azure-SECRET-77d1e0aa"
CALL_SECRET = "percall-SECRET-31b5"
PASSWORD = "hunter2-SECRET-pw"
HELLO = Context(messages=[UserMessage(content="hi")])
SECRETS = (KEY, HEADER_SECRET, CALL_SECRET, PASSWORD, "SECRET")


def model_for(api: str, base_url: str, **fields: Any) -> Model:
    return Model(id="m", api=api, provider="custom", base_url=base_url, **fields)  # type: ignore[arg-type]


async def run(model: Model, *, cassette: Path | None = None, **options: Any) -> str:
    """Stream once; everything the failure produced (events, final message), as one text."""
    fn = Cassette.record(cassette).wrap() if cassette is not None else None
    opts = {"api_key": KEY, "max_retries": 0, **options}
    if fn is not None:
        events_stream = fn(model, HELLO, StreamOptions(**opts))
    else:
        events_stream = stream(model, HELLO, **opts)
    seen = [event async for event in events_stream]
    final = await events_stream.result()
    assert final.stop_reason == "error", final
    parts = [json.dumps(e.model_dump(mode="json"), default=str) for e in seen]
    parts.append(final.model_dump_json())
    return "\n".join(parts)


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def echo(request_headers: dict[str, str]) -> str:
    """What a careless server or proxy sends back: every header it received."""
    return json.dumps(request_headers)


@pytest.fixture(autouse=True)
def capture_logs(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    yield
    assert_clean(caplog.text)


@pytest.mark.parametrize(
    ("api", "path"),
    [
        ("openai-completions", "/v1"),
        ("anthropic-messages", ""),
        ("openai-responses", "/v1"),
        ("google-generative-ai", ""),
    ],
)
@pytest.mark.parametrize("line", ["invalid-json", "not-an-object"])
async def test_a_malformed_stream_line_echoing_the_key_is_scrubbed(
    api: str, path: str, line: str, tmp_path: Path
) -> None:
    async with LoopbackServer() as server:
        raw = f"oops {KEY} Bearer {KEY}" if line == "invalid-json" else json.dumps([KEY])
        server.add(Reply.sse(sse_chunks([raw])))
        cassette = tmp_path / "c.jsonl"
        text = await run(model_for(api, server.url + path), cassette=cassette)
    if line == "invalid-json":
        assert "***" in text  # the line was quoted, with the key blanked
    assert_clean(text)
    assert_clean(cassette.read_text())


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
async def test_an_error_body_echoing_model_and_call_headers_is_scrubbed(
    api: str, tmp_path: Path
) -> None:
    async with LoopbackServer() as server:
        model = model_for(api, server.url + "/v1", headers={"api-key": HEADER_SECRET})
        server.add(
            Reply.json(
                400,
                {
                    "error": {
                        "message": f"bad request from {HEADER_SECRET} and {CALL_SECRET} and {KEY}"
                    }
                },
            )
        )
        cassette = tmp_path / "c.jsonl"
        text = await run(model, cassette=cassette, headers={"X-Trace": CALL_SECRET})
        sent = server.requests[0].headers
    assert sent["api-key"] == HEADER_SECRET and sent["x-trace"] == CALL_SECRET
    assert "HTTP 400" in text
    assert_clean(text)
    assert_clean(cassette.read_text())


async def test_a_non_json_error_body_echoing_headers_is_scrubbed() -> None:
    async with LoopbackServer() as server:
        model = model_for(
            "openai-completions", server.url + "/v1", headers={"api-key": HEADER_SECRET}
        )
        server.add(Reply(status=502, headers={"content-type": "text/plain"}, chunks=[b""]))
        server.replies[-1].chunks = [
            (
                "proxy error; request headers were "
                + echo(
                    {
                        "api-key": HEADER_SECRET,
                        "authorization": f"Bearer {KEY}",
                        "x-custom-token": CALL_SECRET,
                    }
                )
            ).encode()
        ]
        text = await run(model, headers={"x-custom-token": CALL_SECRET})
    assert "HTTP 502" in text
    assert_clean(text)


async def test_a_wrong_content_type_body_echoing_the_key_is_scrubbed() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.json(200, {"message": f"your key {KEY} is wrong"}))
        text = await run(model_for("openai-completions", server.url + "/v1"))
    assert "Expected an event stream" in text
    assert_clean(text)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages", "openai-responses"])
async def test_connection_failure_does_not_quote_the_urls_password(
    api: str, tmp_path: Path
) -> None:
    url = f"http://user-SECRET:{PASSWORD}@127.0.0.1:{closed_port()}/v1"
    cassette = tmp_path / "c.jsonl"
    text = await run(model_for(api, url), cassette=cassette)
    assert "Connection to http://***@127.0.0.1" in text
    assert_clean(text)
    assert_clean(cassette.read_text())


async def test_open_sse_errors_carry_no_credential_in_message_or_body() -> None:
    async with LoopbackServer() as server:
        server.add(Reply.json(401, {"error": {"message": f"bad key {KEY}", "echo": HEADER_SECRET}}))
        model = model_for(
            "openai-completions", server.url, headers={"Authorization": HEADER_SECRET}
        )
        with pytest.raises(ProviderError) as info:
            async with open_sse(
                model,
                StreamOptions(max_retries=0),
                server.url + "/x",
                {"authorization": f"Bearer {KEY}"},
                {},
                api_key=KEY,
            ) as events:
                async for _ in events:
                    pass
    assert_clean(str(info.value))
    assert_clean(info.value.body)


async def test_a_mid_stream_error_event_echoing_a_header_is_scrubbed() -> None:
    async with LoopbackServer() as server:
        model = model_for("anthropic-messages", server.url, headers={"x-api-key-2": HEADER_SECRET})
        events = [
            {"type": "message_start", "message": {"id": "m1", "usage": {}}},
            {"type": "error", "error": {"type": "overloaded", "message": f"h={HEADER_SECRET}"}},
        ]
        server.add(Reply.sse(sse_chunks(events, event_names=True)))
        text = await run(model)
    assert "overloaded" in text
    assert_clean(text)


def test_redactor_spellings_and_credential_header_names() -> None:
    redactor = Redactor.for_request(
        api_keys=["k3y/with+chars"],
        model_headers={"Authorization": "Basic dXNlcjpwYXNz", "Accept": "text/event-stream"},
        call_headers={"x-req": "short", "x-long": "abcdefgh"},
        urls=["https://bob:p%40ss@example.com/v1"],
    )
    text = (
        "k3y/with+chars k3y%2Fwith%2Bchars dXNlcjpwYXNz abcdefgh p@ss text/event-stream short "
        "see https://alice:pw@elsewhere.org/x"
    )
    scrubbed = redactor.scrub(text)
    assert scrubbed == (
        "*** *** *** *** *** text/event-stream short see https://***@elsewhere.org/x"
    )
    assert is_credential_header("x-api-key") and is_credential_header("api-key")
    assert is_credential_header("Proxy-Authorization") and not is_credential_header("accept")
