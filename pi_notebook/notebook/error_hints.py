"""One line after a failed ``run_python`` that says how to fix the errors small models most
often cannot get past alone.

- A ``KeyError`` from pandas (a column or label that is not there, such as ``'BMI'`` for
  ``'bmi'``): the model resends the same code because the traceback never says which keys exist.
  The hint names the closest ones and lists what is there, read from the pandas object that
  raised (the ``self`` of the innermost pandas frame).
- A ``NameError`` for a usual alias (``np``, ``pd``, ``plt``, ``stats``, ``sns``): the import
  that defines it.
- ``return`` at the top level of the code (a ``SyntaxError``): the model resends it unchanged,
  because the code reads like a function body to it; the hint says to print the value.

Anything else gets no hint: a wrong guess would cost the model more than silence.
"""

from __future__ import annotations

import difflib
from types import TracebackType
from typing import Any

__all__ = ["error_hint"]

_MAX_KEYS = 30
_MAX_LABELS = 200
"""Beyond this many labels (a long row index) a list of them helps no one."""
_ALIASES = {
    "np": "import numpy as np",
    "pd": "import pandas as pd",
    "plt": "import matplotlib.pyplot as plt",
    "stats": "from scipy import stats",
    "sns": "import seaborn as sns",
    "sm": "import statsmodels.api as sm",
}


def error_hint(exc: BaseException) -> str | None:
    """The hint for ``exc`` raised by the model's code, or None."""
    if isinstance(exc, KeyError) and exc.args:
        try:
            return _key_hint(exc.args[0], exc.__traceback__)
        except Exception:  # a half-built pandas object: no hint rather than a second error
            return None
    if isinstance(exc, SyntaxError) and exc.msg == "'return' outside function":
        return (
            "Hint: this code runs at the top level, not inside a function, so it cannot "
            "return: print the value instead."
        )
    if isinstance(exc, NameError) and not isinstance(exc, UnboundLocalError):
        fix = _ALIASES.get(getattr(exc, "name", None) or "")
        return f"Hint: import it first: {fix}" if fix else None
    return None


def _key_hint(key: Any, tb: TracebackType | None) -> str | None:
    keys = _pandas_keys(tb)
    if keys is None:
        return None
    shown = ", ".join(repr(k) for k in keys[:_MAX_KEYS])
    more = f", … ({len(keys)} in all)" if len(keys) > _MAX_KEYS else ""
    text = str(key)
    wanted = text.removeprefix("Column not found: ")  # a groupby's message
    label = key if wanted == text else wanted
    if "None of [" in wanted or "not in index" in wanted:  # a list of labels: pandas' message
        return f"Hint: not all of those labels are there. The keys are: {shown}{more}"
    folded = {str(k).casefold(): k for k in keys}
    close = [folded[m] for m in difflib.get_close_matches(wanted.casefold(), list(folded), n=3)]
    lead = f"Hint: {label!r} is not there."
    if close:
        lead += " Did you mean " + " or ".join(repr(c) for c in close) + "?"
        same = next((c for c in close if str(c) == str(label) and type(c) is not type(label)), None)
        if same is not None:  # '1' for the integer label 1: the words alone read as the same
            kinds = type(same).__name__, type(label).__name__
            lead += f" The label is {kinds[0]} {same!r}, not {kinds[1]} {label!r}."
    return f"{lead} The keys are: {shown}{more}"


def _pandas_keys(tb: TracebackType | None) -> list[Any] | None:
    """The labels of the pandas object whose lookup failed: the ``self`` of the innermost
    frame that has a pandas Index, DataFrame or Series there (None when it has too many)."""
    labels: Any = None
    while tb is not None:
        try:
            found = _labels_of(tb.tb_frame.f_locals.get("self"))
        except Exception:  # e.g. a groupby that failed in its constructor
            found = None
        if found is not None:
            labels = found
        tb = tb.tb_next
    if labels is None or len(labels) > _MAX_LABELS:
        return None
    return list(labels)


def _labels_of(value: Any) -> Any:
    """A pandas DataFrame's columns, a Series' index, an Index itself; None for the rest."""
    module = type(value).__module__ or ""
    if module != "pandas" and not module.startswith("pandas."):
        return None
    name = type(value).__name__
    if name == "DataFrame":
        return value.columns
    if name == "Series":
        return value.index
    if name == "DataFrameGroupBy":
        return value.obj.columns
    return value if name.endswith("Index") else None
