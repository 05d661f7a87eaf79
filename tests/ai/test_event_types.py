"""The one list of assistant event type names matches the event classes it names."""

from __future__ import annotations

from typing import get_args

from pi_notebook.ai.events import (
    ASSISTANT_EVENT_TYPES,
    BLOCK_EVENT_TYPES,
    DELTA_EVENT_TYPES,
    AssistantMessageEvent,
)


def test_the_names_are_the_event_classes_in_order() -> None:
    union = get_args(AssistantMessageEvent)[0]
    declared = tuple(cls.model_fields["type"].default for cls in get_args(union))
    assert declared == ASSISTANT_EVENT_TYPES
    assert {"text_delta", "thinking_delta", "toolcall_delta"} == DELTA_EVENT_TYPES
    assert set(declared) - {"start", "done", "error"} == BLOCK_EVENT_TYPES
    assert all(
        "content_index" in union_member.model_fields
        for union_member in get_args(union)
        if union_member.model_fields["type"].default in BLOCK_EVENT_TYPES
    )
