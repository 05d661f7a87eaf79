"""Models that share one fields set read as if each had its own, and a change to one of them
never shows in another."""

from __future__ import annotations

import copy

from pi_notebook.ai.fields_sets import SharedFieldsSet, share_fields_sets
from pi_notebook.ai.types import AssistantMessage, Usage


def _reply(text: str, tokens: int) -> AssistantMessage:
    return AssistantMessage.model_validate(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "faux",
            "provider": "faux",
            "model": "m",
            "usage": {"input": tokens, "output": 1, "cost": {"total": 0.5}},
            "stopReason": "stop",
            "timestamp": 1_700_000_000_000,
        }
    )


def test_models_given_the_same_keys_share_one_set_and_read_the_same() -> None:
    replies = [_reply("a", 3), _reply("b", 4)]
    dumps = [r.model_dump(by_alias=True, exclude_unset=True) for r in replies]
    sets = [r.model_fields_set for r in replies]
    share_fields_sets([*replies, *(r.usage for r in replies), *(r.usage.cost for r in replies)])
    first, second = replies
    assert first.model_fields_set is second.model_fields_set
    assert type(first.model_fields_set) is SharedFieldsSet
    assert first.usage.model_fields_set is second.usage.model_fields_set
    assert first.usage.cost.model_fields_set is second.usage.cost.model_fields_set
    assert [r.model_fields_set for r in replies] == sets
    assert [r.model_dump(by_alias=True, exclude_unset=True) for r in replies] == dumps


def test_models_given_other_keys_keep_them() -> None:
    odd = Usage.model_validate({"input": 1, "reasoning": 2, "cacheWrite1h": 3})
    usual = [Usage.model_validate({"input": n, "output": n}) for n in range(2)]
    share_fields_sets([*usual, odd])
    assert usual[0].model_fields_set is usual[1].model_fields_set
    assert odd.model_fields_set == {"input", "reasoning", "cache_write_1h"}


def test_a_change_copies_the_set_first() -> None:
    replies = [_reply("a", 3), _reply("b", 4)]
    share_fields_sets(replies)
    first, second = replies
    shared = set(second.model_fields_set)
    first.error_message = "late"  # a field not given before
    first.note = "extra"  # an extra key
    assert first.model_fields_set == shared | {"error_message", "note"}
    assert type(first.model_fields_set) is set
    assert second.model_fields_set == shared
    assert "errorMessage" not in second.model_dump(by_alias=True, exclude_unset=True)
    copied = second.model_copy(update={"response_id": "r"})
    assert copied.model_fields_set == shared | {"response_id"}
    assert second.model_fields_set == shared
    deep = copy.deepcopy(second)
    deep.duration_ms = 5
    assert second.model_fields_set == shared and deep.model_fields_set == shared | {"duration_ms"}
