"""Pydantic models built from parts that are valid already, without validation.

These build what ``model_construct`` builds (the instance dict, the fields set, the extras dict,
no private attributes) without pydantic's per-field loop, and without a call per slot: the
object starts as a ``_Blank``, a model class with the same layout as every ``PiModel`` whose
attributes are set as a plain object's (its ``__setattr__`` is ``object``'s), and then takes its
real class (``__class__`` assignment, which CPython allows between classes of one layout). Its
slots are then set exactly as ``model_construct`` sets them. Setting each slot through
``BaseModel``'s slot descriptors (``set_dict`` and co.) reaches the same storage, but each such
call builds an argument tuple; ``object.__setattr__`` costs more still (it looks each slot up by
name and walks the class's bases first). The providers' per-delta events, the builder's
snapshots and the agent loop's per-event and per-turn objects are built this way, millions of
them in a long run. Nothing here checks a value: a caller passes only fields it knows are valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from pydantic import BaseModel

__all__ = [
    "blank",
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


class _Blank(BaseModel):
    """An object on its way to becoming a model of another class (see the module docstring):
    ``BaseModel``'s slots and layout, with plain attribute assignment and no ``__init__``."""

    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
    # Both are needed: either one in pydantic's form keeps every assignment a Python call.
    __init__ = object.__init__


blank: Final[Callable[[], Any]] = _Blank
"""A new object to give a model's four slots and then its class: ``b = blank()``,
``b.__dict__ = …``, ``b.__pydantic_fields_set__ = …``, ``b.__pydantic_extra__ = …``,
``b.__pydantic_private__ = …``, ``b.__class__ = cls`` (the per-delta paths spell it out)."""


def construct(
    cls: type[_M],
    values: dict[str, Any],
    fields_set: set[str],
    private: dict[str, Any] | None = None,
) -> _M:
    """A ``cls`` holding ``values`` (every field, in field order), as ``model_construct`` would
    build it: ``fields_set`` counts as given, no extras."""
    model = _Blank()
    model.__dict__ = values
    model.__pydantic_fields_set__ = fields_set
    model.__pydantic_extra__ = {}
    model.__pydantic_private__ = private
    model.__class__ = cls
    return model  # type: ignore[no-any-return]  # not typing.cast: a call per object
