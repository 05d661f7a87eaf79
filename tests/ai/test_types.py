"""The message model round-trips pi's JSON (messages taken from the golden session files)."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from tests.paths import GOLDEN, read_jsonl

MESSAGE = TypeAdapter(Message)


def golden_messages() -> list[dict]:
    out = []
    for name in ("harness-session.jsonl", "sample-session.jsonl"):
        for entry in read_jsonl(GOLDEN / name):
            if entry.get("type") == "message":
                out.append(entry["message"])
    return out


@pytest.mark.parametrize("raw", golden_messages())
def test_golden_messages_round_trip(raw: dict) -> None:
    message = MESSAGE.validate_python(raw)
    assert message.model_dump(mode="json", by_alias=True, exclude_none=True) == raw


def test_golden_messages_cover_every_role() -> None:
    roles = {m["role"] for m in golden_messages()}
    assert {"user", "assistant", "toolResult"} <= roles


def test_snake_case_attributes_and_camel_case_json() -> None:
    result = ToolResultMessage(
        tool_call_id="c1", tool_name="echo", content=[TextContent(text="x")], is_error=True
    )
    data = result.to_json_dict()
    assert data["toolCallId"] == "c1" and data["isError"] is True and data["role"] == "toolResult"
    assert ToolResultMessage.model_validate(data) == result
    image = ImageContent(data="AAAA", mime_type="image/png")
    assert image.to_json_dict() == {"type": "image", "data": "AAAA", "mimeType": "image/png"}


def test_tool_call_parse_error_is_never_serialised() -> None:
    call = ToolCall(id="c", name="f", arguments={}, parse_error="bad", raw_arguments="{")
    assert call.to_json_dict() == {"type": "toolCall", "id": "c", "name": "f", "arguments": {}}


def test_user_message_accepts_string_or_blocks() -> None:
    assert UserMessage(content="hi").content == "hi"
    blocks = UserMessage.model_validate(
        {"role": "user", "content": [{"type": "text", "text": "a"}], "timestamp": 1}
    )
    assert isinstance(blocks.content, list) and blocks.content[0].text == "a"  # type: ignore[union-attr]


def test_assistant_helpers() -> None:
    msg = AssistantMessage(
        content=[TextContent(text="a"), ToolCall(id="1", name="f"), TextContent(text="b")],
        api="x",
        provider="p",
        model="m",
    )
    assert msg.text == "ab"
    assert [c.id for c in msg.tool_calls] == ["1"]
    assert msg.usage == Usage()


def test_model_defaults_and_ref() -> None:
    model = Model(id="m", api="openai-completions", provider="custom", base_url="http://x/v1")
    assert model.ref == "custom/m"
    assert model.to_json_dict()["baseUrl"] == "http://x/v1"
