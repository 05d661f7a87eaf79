"""How listeners are called: ``listener(event)`` or ``listener(event, signal)``.

The choice is explicit, not a guess from the arity: a listener gets the run's abort signal as
its second argument only if it asks for it by

- naming its second positional parameter ``signal`` (``def on(event, signal): …``), or
- making its second parameter positional-only with no default (``def on(event, sig, /): …``),
  or
- taking ``*args`` after the event (or as its only parameter).

Anything else is called with the event alone: ``lambda e, i=i: …`` keeps its ``i``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["takes_signal"]


def takes_signal(listener: Callable[..., Any]) -> bool:
    """Whether ``listener`` asks for the abort signal as its second argument (see above)."""
    try:
        parameters = list(inspect.signature(listener).parameters.values())
    except (TypeError, ValueError):
        return False
    for position, parameter in enumerate(parameters, start=1):
        if parameter.kind is parameter.VAR_POSITIONAL:
            return True
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            return False
        if position == 2:
            if parameter.name == "signal":
                return True
            return parameter.kind is parameter.POSITIONAL_ONLY and (
                parameter.default is parameter.empty
            )
    return False
