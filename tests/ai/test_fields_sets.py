"""Models that share one fields set read as if each had its own, and a change to one of them
never shows in another."""

from __future__ import annotations

import copy
import pickle

import pytest
from pydantic import BaseModel

from pi_notebook.ai.fields_sets import NO_EXTRAS, SharedFieldsSet, share_fields_sets
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


def test_models_without_extra_keys_share_one_empty_extras() -> None:
    replies = [_reply("a", 3), _reply("b", 4)]
    odd = AssistantMessage.model_validate({**_reply("c", 5).to_json_dict(), "note": "kept"})
    fresh = _reply("a", 3)
    share_fields_sets([*replies, odd, *(r.usage for r in replies)])
    first, second = replies
    assert first.__pydantic_extra__ is NO_EXTRAS and second.__pydantic_extra__ is NO_EXTRAS
    assert first.usage.__pydantic_extra__ is NO_EXTRAS
    assert odd.model_extra == {"note": "kept"}
    assert first == fresh and first.model_dump() == fresh.model_dump()
    assert first.model_extra == {}

    first.note = "late"  # an extra key: this model gets extras of its own
    assert first.model_extra == {"note": "late"}
    assert second.model_extra == {} and NO_EXTRAS == {}
    assert first.to_json_dict()["note"] == "late" and "note" not in second.to_json_dict()
    for copied in (second.model_copy(), copy.deepcopy(second)):
        copied.other = 1
        assert copied.model_extra == {"other": 1} and second.model_extra == {}
    with pytest.raises(TypeError):
        second.model_extra["x"] = 1  # type: ignore[index]
    assert NO_EXTRAS == {}


def test_models_that_keep_no_extras_are_left_alone() -> None:
    class Strict(BaseModel):
        name: str

    models = [Strict(name="a"), Strict(name="b")]
    share_fields_sets(models)
    assert [m.model_extra for m in models] == [None, None]


def test_a_pickled_model_with_shared_slots_takes_changes() -> None:
    replies = [_reply("a", 3), _reply("b", 4)]
    share_fields_sets(replies)
    copied = pickle.loads(pickle.dumps(replies[0]))
    assert copied == replies[0]
    copied.note = "extra"  # its extras and fields set were shared ones: it gets its own
    copied.error_message = "late"
    assert copied.model_extra == {"note": "extra"} and replies[0].model_extra == {}
    assert "error_message" not in replies[1].model_fields_set
