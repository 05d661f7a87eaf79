"""Replay rules of ``transform_messages`` (pi's transform-messages)."""

from __future__ import annotations

from typing import Any

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    transform_messages,
)
from pi_notebook.ai.transform import IMAGE_PLACEHOLDER, NO_RESULT_TEXT, TOOL_IMAGE_PLACEHOLDER

TARGET = Model(id="gpt-x", api="openai-completions", provider="openai", input=["text", "image"])
TEXT_ONLY = TARGET.model_copy(update={"input": ["text"]})
IMG = ImageContent(data="aGk=", mime_type="image/png")


def assistant(*content: Any, model: Model = TARGET, **fields: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content), api=model.api, provider=model.provider, model=model.id, **fields
    )


def foreign(*content: Any, **fields: Any) -> AssistantMessage:
    return AssistantMessage(
        content=list(content),
        api="anthropic-messages",
        provider="anthropic",
        model="claude",
        **fields,
    )


def result(call_id: str, text: str = "ok", *extra: Any) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="f", content=[TextContent(text=text), *extra]
    )


def dumps(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_json_dict() for m in messages]


def test_images_become_placeholders_for_text_only_models_and_runs_collapse() -> None:
    user = UserMessage(content=[TextContent(text="look"), IMG, IMG, TextContent(text="and"), IMG])
    call = ToolCall(id="c1", name="f")
    tool = result("c1", "shot", IMG, IMG)
    out = transform_messages([user, assistant(call), tool], TEXT_ONLY)
    assert [b.to_json_dict() for b in out[0].content] == [  # type: ignore[union-attr]
        {"type": "text", "text": "look"},
        {"type": "text", "text": IMAGE_PLACEHOLDER},
        {"type": "text", "text": "and"},
        {"type": "text", "text": IMAGE_PLACEHOLDER},
    ]
    assert [b.to_json_dict() for b in out[2].content] == [  # type: ignore[union-attr]
        {"type": "text", "text": "shot"},
        {"type": "text", "text": TOOL_IMAGE_PLACEHOLDER},
    ]
    # Models with image input get the images untouched (the very same objects).
    same = transform_messages([user, assistant(call), tool], TARGET)
    assert same[0] is user and same[2] is tool


def test_foreign_thinking_becomes_text_and_signatures_are_stripped() -> None:
    message = foreign(
        ThinkingContent(thinking="let me think", thinking_signature="sig"),
        ThinkingContent(thinking="  ", thinking_signature="sig2"),
        ThinkingContent(thinking="[redacted]", thinking_signature="opaque", redacted=True),
        TextContent(text="answer", text_signature='{"v":1,"id":"msg_1"}'),
        ToolCall(id="c1", name="f", arguments={"a": 1}, thought_signature="g-sig"),
    )
    out = transform_messages([message, result("c1")], TARGET)
    assert [b.to_json_dict() for b in out[0].content] == [  # type: ignore[union-attr]
        {"type": "text", "text": "let me think"},
        {"type": "text", "text": "answer"},
        {"type": "toolCall", "id": "c1", "name": "f", "arguments": {"a": 1}},
    ]


def test_same_model_messages_keep_thinking_and_signatures() -> None:
    message = assistant(
        ThinkingContent(thinking="hm", thinking_signature="reasoning_content"),
        ThinkingContent(thinking="", thinking_signature="encrypted"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="x", redacted=True),
        TextContent(text="hi", text_signature="t"),
        ToolCall(id="c1", name="f", thought_signature="g"),
    )
    out = transform_messages([message, result("c1")], TARGET, lambda i: "renamed")
    assert out[0] is message
    assert out[1].tool_call_id == "c1"  # type: ignore[union-attr]


def test_same_model_drops_only_empty_unsigned_thinking() -> None:
    message = assistant(ThinkingContent(thinking=" "), TextContent(text="hi"))
    out = transform_messages([message], TARGET)
    assert dumps(out)[0]["content"] == [{"type": "text", "text": "hi"}]


def test_foreign_tool_call_ids_are_normalised_with_their_results() -> None:
    message = foreign(
        ToolCall(id="call_1|fc_very+long/id=", name="f"),
        ToolCall(id="call_2|fc_other", name="f"),
    )
    out = transform_messages(
        [message, result("call_1|fc_very+long/id="), result("call_2|fc_other")],
        TARGET,
        lambda i: i.split("|")[0],
    )
    assert [c.id for c in out[0].tool_calls] == ["call_1", "call_2"]  # type: ignore[union-attr]
    assert [m.tool_call_id for m in out[1:]] == ["call_1", "call_2"]  # type: ignore[union-attr]


def test_errored_and_aborted_assistant_messages_are_dropped_with_their_results() -> None:
    user = UserMessage(content="hi")
    failed = assistant(TextContent(text="partial"), stop_reason="error", error_message="boom")
    aborted = assistant(ToolCall(id="c9", name="f"), stop_reason="aborted")
    ok = assistant(TextContent(text="fine"))
    out = transform_messages([user, failed, aborted, result("c9"), ok], TARGET)
    assert out == [user, ok]


def test_orphan_tool_calls_get_synthetic_error_results() -> None:
    first = assistant(ToolCall(id="a", name="f"), ToolCall(id="b", name="g"))
    second = assistant(ToolCall(id="c", name="h"))
    out = transform_messages(
        [UserMessage(content="go"), first, result("a"), UserMessage(content="wait"), second],
        TARGET,
    )
    roles = [(m.role, getattr(m, "tool_call_id", None)) for m in out]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "a"),
        ("toolResult", "b"),
        ("user", None),
        ("assistant", None),
        ("toolResult", "c"),
    ]
    synthetic = out[3]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.is_error and synthetic.tool_name == "g"
    assert synthetic.content == [TextContent(text=NO_RESULT_TEXT)]
    assert out[6].tool_name == "h"  # type: ignore[union-attr]


def test_orphans_before_the_next_assistant_message() -> None:
    out = transform_messages(
        [assistant(ToolCall(id="a", name="f")), assistant(TextContent(text="next"))], TARGET
    )
    assert [m.role for m in out] == ["assistant", "toolResult", "assistant"]


def test_inputs_are_never_mutated() -> None:
    user = UserMessage(content=[TextContent(text="x"), IMG])
    message = foreign(
        ThinkingContent(thinking="t", thinking_signature="s"),
        TextContent(text="a", text_signature="sig"),
        ToolCall(id="x|y", name="f", thought_signature="g"),
    )
    tool = result("x|y", "r", IMG)
    before = dumps([user, message, tool])
    transform_messages([user, message, tool], TEXT_ONLY, lambda i: i.replace("|", "_"))
    assert dumps([user, message, tool]) == before


def test_a_same_model_call_reusing_a_renamed_id_keeps_its_own_results() -> None:
    old = foreign(ToolCall(id="dup", name="f"))
    own = assistant(ToolCall(id="dup", name="f"))
    out = transform_messages([old, result("dup"), own, result("dup")], TARGET, lambda i: "n_" + i)
    ids = [getattr(m, "tool_call_id", None) for m in out]
    assert ids == [None, "n_dup", None, "dup"]
