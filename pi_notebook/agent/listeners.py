"""How listeners are called: ``listener(event)`` or ``listener(event, signal)``."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["takes_signal"]


def takes_signal(listener: Callable[..., Any]) -> bool:
    """Whether ``listener`` accepts a second positional argument (the run's abort signal)."""
    try:
        parameters = inspect.signature(listener).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for parameter in parameters:
        if parameter.kind is parameter.VAR_POSITIONAL:
            return True
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2
