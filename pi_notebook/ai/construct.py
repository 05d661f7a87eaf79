"""Pydantic models built from parts that are valid already, without validation.

These build what ``model_construct`` builds (the instance dict, the fields set, the extras dict,
no private attributes) but set them through ``BaseModel``'s slot descriptors directly.
``object.__setattr__`` reaches the same descriptors, but it looks each one up by name and first
walks the class's bases to check which ``__setattr__`` it bypasses, which costs more than the
rest of building the object. The providers' per-delta events, the builder's snapshots and the
agent loop's per-event and per-turn objects are built this way, millions of them in a long run.
Nothing here checks a value: a caller passes only fields it knows are valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel

__all__ = [
    "construct",
    "new_instance",
    "set_dict",
    "set_extra",
    "set_fields_set",
    "set_private",
]

_M = TypeVar("_M", bound=BaseModel)

new_instance: Final = object.__new__
"""An instance of a model class with none of its slots set yet."""

_Setter = Callable[[Any, Any], None]
_slots = vars(BaseModel)
set_dict: Final[_Setter] = _slots["__dict__"].__set__
"""Sets a model's field values (its instance dict, in field order)."""
set_fields_set: Final[_Setter] = _slots["__pydantic_fields_set__"].__set__
"""Sets which fields count as given explicitly (``model_fields_set``)."""
set_extra: Final[_Setter] = _slots["__pydantic_extra__"].__set__
"""Sets the extra keys (a dict for ``extra="allow"`` models, as every ``PiModel``)."""
set_private: Final[_Setter] = _slots["__pydantic_private__"].__set__
"""Sets the private attributes (``None`` when the model has none)."""
del _slots


def construct(
    cls: type[_M],
    values: dict[str, Any],
    fields_set: set[str],
    private: dict[str, Any] | None = None,
) -> _M:
    """A ``cls`` holding ``values`` (every field, in field order), as ``model_construct`` would
    build it: ``fields_set`` counts as given, no extras."""
    model = new_instance(cls)
    set_dict(model, values)
    set_fields_set(model, fields_set)
    set_extra(model, {})
    set_private(model, private)
    return model
