"""``{name}`` interpolation of ``%%agent`` cell bodies from the notebook namespace.

``{name}``, ``{obj.attr}``, ``{items[0]}`` and format specs (``{x:.2f}``, ``{df!r}``) work as in
``str.format``; ``{{`` and ``}}`` are literal braces. Only names are looked up — nothing is
evaluated — so a prompt can never run code by accident.

IPython's own names work like any other: ``{In[3]}`` is the source of cell 3, ``{Out[3]}`` its
result, ``{_}`` the last result (``{__}``, ``{___}`` the ones before). A cell that has not run
or has no result gets an error naming the cells that have.
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

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        try:
            return super().get_field(field_name, args, kwargs)
        except (IndexError, KeyError) as exc:
            name = field_name.split("[", 1)[0].split(".", 1)[0]
            if name in ("In", "Out") and not isinstance(exc, InterpolationError):
                raise InterpolationError(_history_hint(field_name, name, self.namespace)) from None
            raise


def _history_hint(field_name: str, name: str, namespace: Mapping[str, Any]) -> str:
    """Why ``{In[n]}`` / ``{Out[n]}`` cannot be filled, and which cells can."""
    if name == "Out":
        known = sorted(k for k in namespace.get("Out", {}) if isinstance(k, int))
        have = ", ".join(str(k) for k in known[-10:]) or "none yet"
        return (
            f"{{{field_name}}} in the prompt: that cell has no result in Out "
            f"(cells with a result: {have}). Use {{In[n]}} for a cell's source."
        )
    count = len(namespace.get("In", ())) - 1
    return (
        f"{{{field_name}}} in the prompt: no such cell in In (cells run so far: 1 to {count}). "
        "Write {In[n]} with a cell's execution count."
    )


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
