"""``construct``: the object a ``_Blank`` becomes is the one ``model_construct`` builds, for every
model class of the event protocol and the messages (one layout for them all)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from pydantic import BaseModel

from pi_notebook.agent import events as agent_events
from pi_notebook.ai import events as ai_events
from pi_notebook.ai import types as ai_types
from pi_notebook.ai.construct import construct
from pi_notebook.ai.types import PiModel, TextContent


def _models() -> list[type[PiModel]]:
    found: list[type[PiModel]] = []
    for module in (ai_types, ai_events, agent_events):
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, PiModel)
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return found


def _state(model: BaseModel) -> tuple[Any, ...]:
    return (
        type(model),
        model.__dict__,
        model.__pydantic_fields_set__,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


@pytest.mark.parametrize("cls", _models(), ids=lambda cls: cls.__name__)
def test_construct_builds_what_model_construct_builds(cls: type[PiModel]) -> None:
    values = {name: f"value of {name}" for name in cls.model_fields}
    reference = cls.model_construct(**values)
    built = construct(cls, dict(reference.__dict__), set(reference.model_fields_set))
    if reference.__pydantic_private__ is not None:  # model_construct fills in the defaults
        built.__pydantic_private__ = dict(reference.__pydantic_private__)
    assert _state(built) == _state(reference)
    assert list(built.__dict__) == list(cls.model_fields)
    assert isinstance(built, cls) and isinstance(built, PiModel)


def test_a_constructed_model_behaves_as_any_other() -> None:
    text = construct(TextContent, {"type": "text", "text": "hi", "text_signature": None}, {"text"})
    text.text = "changed"  # pydantic's __setattr__ again: the field counts as set
    text.note = "extra"  # type: ignore[attr-defined]
    assert text.model_fields_set == {"text", "note"} and text.model_extra == {"note": "extra"}
    assert text.to_json_dict() == {"type": "text", "text": "changed", "note": "extra"}
    assert text == TextContent(text="changed", note="extra")  # type: ignore[call-arg]
    assert text.model_copy().text == "changed"
    ref = weakref.ref(text)
    del text
    gc.collect()
    assert ref() is None
