"""The harness's hook handlers by hook type, and how they are called: in order of registration,
the last non-``None`` result winning, a failing handler an ``AgentHarnessError("hook")``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..ai.options import maybe_await
from ..ai.producer import describe_error
from .hooks import HOOK_TYPES, AgentHarnessError, coerce_result

__all__ = ["HookRegistry"]

_R = TypeVar("_R")


class HookRegistry:
    def __init__(self) -> None:
        self._handlers: dict[str, tuple[Callable[[Any], Any], ...]] = {}

    def add(self, hook_type: str, handler: Callable[[Any], Any]) -> Callable[[], None]:
        """Register ``handler``; returns a function that removes it."""
        if hook_type not in HOOK_TYPES:
            raise AgentHarnessError(
                "invalid_argument",
                f"unknown hook {hook_type!r} (one of: {', '.join(sorted(HOOK_TYPES))})",
            )
        if not callable(handler):
            raise AgentHarnessError("invalid_argument", "handler must be callable")
        self._handlers[hook_type] = (*self._handlers.get(hook_type, ()), handler)

        def remove() -> None:
            self._handlers[hook_type] = tuple(
                h for h in self._handlers.get(hook_type, ()) if h is not handler
            )

        return remove

    def handlers(self, hook_type: str) -> tuple[Callable[[Any], Any], ...]:
        return self._handlers.get(hook_type, ())

    async def call(self, hook_type: str, handler: Callable[[Any], Any], event: object) -> Any:
        """One handler's raw result."""
        try:
            return await maybe_await(handler(event))
        except AgentHarnessError:
            raise
        except Exception as exc:
            raise AgentHarnessError(
                "hook", f"{hook_type} hook failed: {describe_error(exc)}"
            ) from exc

    async def run(self, hook_type: str, event: object, result_type: type[_R]) -> _R | None:
        """Every handler of ``hook_type`` in order; the last non-``None`` result wins."""
        result: object = None
        for handler in self._handlers.get(hook_type, ()):
            value = await self.call(hook_type, handler, event)
            if value is not None:
                result = value
        if result is None:
            return None
        return self.coerce(hook_type, result, result_type)

    @staticmethod
    def coerce(hook_type: str, value: object, result_type: type[_R]) -> _R:
        """A handler's result as ``result_type`` (a dict of its fields is accepted)."""
        try:
            return coerce_result(value, result_type)
        except (TypeError, ValueError) as exc:
            raise AgentHarnessError("hook", f"{hook_type} hook returned {exc}") from exc
