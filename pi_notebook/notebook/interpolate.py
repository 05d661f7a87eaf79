"""``{name}`` interpolation of ``%%agent`` cell bodies from the notebook namespace.

``{name}``, ``{obj.attr}``, ``{items[0]}`` and format specs (``{x:.2f}``, ``{df!r}``) work as in
``str.format``; ``{{`` and ``}}`` are literal braces. Only names are looked up — nothing is
evaluated — so a prompt can never run code by accident.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

__all__ = ["InterpolationError", "interpolate"]


class InterpolationError(ValueError):
    """A ``{…}`` placeholder that cannot be filled; the message says how to fix it."""


class _NamespaceFormatter(string.Formatter):
    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace

    def get_value(self, key: int | str, args: Any, kwargs: Any) -> Any:
        if isinstance(key, int) or key == "":
            raise InterpolationError(
                "Empty or positional '{}' in the prompt: name a variable, like {data}, "
                "or write '{{}}' for literal braces."
            )
        if key not in self.namespace:
            raise InterpolationError(
                f"{{{key}}} in the prompt: no variable named {key!r} in the notebook. "
                f"Define it first, or write {{{{{key}}}}} for literal braces."
            )
        return self.namespace[key]


def interpolate(template: str, namespace: Mapping[str, Any]) -> str:
    """Fill ``{name}`` placeholders of ``template`` from ``namespace``."""
    formatter = _NamespaceFormatter(namespace)
    try:
        return formatter.vformat(template, (), {})
    except InterpolationError:
        raise
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise InterpolationError(f"Could not fill a placeholder in the prompt: {exc}") from None
    except ValueError as exc:  # unbalanced braces, bad format spec
        raise InterpolationError(
            f"The prompt has a malformed placeholder ({exc}). Use {{{{ and }}}} for literal braces."
        ) from None
