"""One ``__pydantic_fields_set__`` for the many models of a class that were given the same keys.

pydantic gives every model it validates a set of the field names it was given: with five names
or more that set is a 728-byte object, and an assistant message read from a session file has
three of them (the message, its usage, its cost), more than the rest of it. Messages read from
a file live as long as their session, and nearly all of one class were given the same keys, so
:func:`share_fields_sets` points those at one :class:`SharedFieldsSet`. Nothing changes for a
reader; a writer gets its own copy first: ``PiModel.__setattr__`` copies a shared set before
pydantic adds to it, and ``model_copy`` copies the set of every model anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pydantic import BaseModel

from .construct import set_fields_set

__all__ = ["SharedFieldsSet", "share_fields_sets"]

_PER_CLASS = 4
"""How many distinct shared sets a class keeps (the common shapes of its models)."""


class SharedFieldsSet(set[str]):
    """A fields set several models hold; never changed in place (a copy is a plain set)."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)


_get_fields_set: Final = vars(BaseModel)["__pydantic_fields_set__"].__get__

_FIRST: dict[type[Any], SharedFieldsSet] = {}
"""Per model class, the shared set tried first (the first one it had)."""
_OTHERS: dict[type[Any], list[SharedFieldsSet]] = {}
"""Per model class, its other shared sets."""


def share_fields_sets(models: Iterable[BaseModel]) -> None:
    """Give each of ``models`` whose fields set equals a shared one of its class that one
    instead (its own is freed); a set not seen before becomes shared while its class has
    fewer than a handful. For models that outlive this call in numbers: it costs a
    comparison per model."""
    first, get, put = _FIRST.get, _get_fields_set, set_fields_set
    for model in models:
        shared = first(type(model))
        if shared is not None and get(model) == shared:
            put(model, shared)
        else:
            _share_other(model)


def _share_other(model: BaseModel) -> None:
    fields = model.__pydantic_fields_set__
    if type(fields) is SharedFieldsSet:
        return
    cls = type(model)
    known = _OTHERS.setdefault(cls, [])
    for shared in known:
        if fields == shared:
            set_fields_set(model, shared)
            return
    if len(known) < _PER_CLASS:
        shared = SharedFieldsSet(fields)
        if cls in _FIRST:
            known.append(shared)
        else:
            _FIRST[cls] = shared
        set_fields_set(model, shared)
