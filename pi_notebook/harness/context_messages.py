"""The messages of a built context, read from the session's lines when first needed.

Building a context decides which messages are on it and replays the settings and the system
prompt; most callers (the model choice, the system prompt, the declared tools) read only
those. The messages themselves are validated from their lines, and kept by the session, the
first time anything reads the sequence, all in one pass, so a caller that never reads them
never pays for them. A line whose content turns out invalid is reported then, naming the file
and line (see :class:`~pi_notebook.harness.entry_list.EntryList`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

from .messages import HarnessMessage

__all__ = ["ContextMessages"]


class ContextMessages(Sequence[HarnessMessage]):
    """A read-only sequence of typed messages, made by ``read`` on first use and kept.

    It compares equal to a list or tuple of the same messages (and to another such sequence),
    and ``+`` with a list gives a list. The messages are the session's own objects: treat them
    as read-only.
    """

    __slots__ = ("_messages", "_read")

    def __init__(self, read: Callable[[], list[HarnessMessage]]) -> None:
        self._read: Callable[[], list[HarnessMessage]] | None = read
        self._messages: list[HarnessMessage] = []

    @property
    def loaded(self) -> bool:
        """Whether the messages have been read."""
        return self._read is None

    def _list(self) -> list[HarnessMessage]:
        read = self._read
        if read is not None:
            self._messages = read()
            self._read = None
        return self._messages

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, index: int) -> HarnessMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[HarnessMessage]: ...
    def __getitem__(self, index: int | slice) -> HarnessMessage | list[HarnessMessage]:
        return self._list()[index]

    def __iter__(self) -> Iterator[HarnessMessage]:
        return iter(self._list())

    def __reversed__(self) -> Iterator[HarnessMessage]:
        return reversed(self._list())

    def __contains__(self, value: object) -> bool:
        return value in self._list()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ContextMessages):
            return self._list() == other._list()
        if isinstance(other, list | tuple):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (equal to lists, which are unhashable)

    def __add__(self, other: Sequence[HarnessMessage]) -> list[HarnessMessage]:
        return [*self._list(), *other]

    def __radd__(self, other: Sequence[HarnessMessage]) -> list[HarnessMessage]:
        return [*other, *self._list()]

    def __repr__(self) -> str:
        if self._read is not None:
            return "ContextMessages(<not read yet>)"
        return f"ContextMessages({self._messages!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or a pickle is the plain list (reading it first).
        return (list, (self._list(),))
