"""One ``__pydantic_fields_set__`` for the many models of a class that were given the same keys,
and one empty ``__pydantic_extra__`` for those with no extra keys.

pydantic gives every model it validates a set of the field names it was given: with five names
or more that set is a 728-byte object, and an assistant message read from a session file has
three of them (the message, its usage, its cost), more than the rest of it; every model of an
``extra="allow"`` class also gets a dict of its extra keys, empty nearly always. Messages read
from a file live as long as their session, and nearly all of one class were given the same keys,
so :func:`share_fields_sets` points those at one :class:`SharedFieldsSet`, and the empty extras
at :data:`NO_EXTRAS`. Nothing changes for a reader; a writer gets its own copy first:
``PiModel.__setattr__`` copies a shared set (and replaces the shared extras) before pydantic
adds to them, and ``model_copy`` copies both for every model anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, NoReturn

from pydantic import BaseModel

from .construct import set_extra, set_fields_set

__all__ = ["NO_EXTRAS", "SharedExtras", "SharedFieldsSet", "share_fields_sets"]

_PER_CLASS = 4
"""How many distinct shared sets a class keeps (the common shapes of its models)."""


class SharedFieldsSet(set[str]):
    """A fields set several models hold; never changed in place (a copy is a plain set)."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> set[str]:
        return set(self)


class SharedExtras(dict[str, Any]):
    """The empty extras several models hold: it refuses changes (a copy is a plain dict)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("the shared empty extras of several models cannot change")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse
    __ior__ = _refuse

    def __copy__(self) -> dict[str, Any]:
        return {}

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {}


NO_EXTRAS: Final = SharedExtras()
"""The ``__pydantic_extra__`` of the shared models that have no extra keys."""

_get_fields_set: Final = vars(BaseModel)["__pydantic_fields_set__"].__get__
_get_extra: Final = vars(BaseModel)["__pydantic_extra__"].__get__

_FIRST: dict[type[Any], SharedFieldsSet] = {}
"""Per model class, the shared set tried first (the first one it had)."""
_OTHERS: dict[type[Any], list[SharedFieldsSet]] = {}
"""Per model class, its other shared sets."""


def share_fields_sets(models: Iterable[BaseModel]) -> None:
    """Give each of ``models`` whose fields set equals a shared one of its class that one
    instead (its own is freed), and each of an ``extra="allow"`` class with no extra keys
    :data:`NO_EXTRAS`; a set not seen before becomes shared while its class has fewer than a
    handful. For models that outlive this call in numbers: it costs a comparison per model."""
    first, get, put = _FIRST.get, _get_fields_set, set_fields_set
    extra, put_extra, allowed = _get_extra, set_extra, _allows_extra
    for model in models:
        cls = type(model)
        shared = first(cls)
        if shared is not None and get(model) == shared:
            put(model, shared)
        else:
            _share_other(model)
        if not extra(model) and (cls in allowed or _allow_extra(cls)):
            put_extra(model, NO_EXTRAS)


_allows_extra: set[type[Any]] = set()
"""The model classes seen keeping extra keys (``extra="allow"``)."""


def _allow_extra(cls: type[BaseModel]) -> bool:
    if cls.model_config.get("extra") != "allow":
        return False
    _allows_extra.add(cls)
    return True


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
