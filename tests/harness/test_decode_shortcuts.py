"""``decode_session`` skips the cycle walk when every parent id comes earlier in the file; the
walk (``_Decoder.break_cycles``) stays the reference: on any file, decoding with the walk forced
gives the same entries or the same error."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_notebook.harness import SessionFileError, SessionFileWarning, jsonl
from pi_notebook.harness.jsonl import decode_session
from tests.harness.test_session_robustness import HEADER, entry

_IDS = ["a", "b", "c", "d", "e"]


def _decode(lines: list[bytes], strict: bool) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SessionFileWarning)
            decoded = decode_session(lines, source="s.jsonl", strict=strict)
    except SessionFileError as exc:
        return ("error", exc.line, exc.reason)
    return [e.model_dump() for e in decoded.entries]


@given(
    parents=st.lists(st.sampled_from([None, *_IDS]), min_size=1, max_size=len(_IDS)),
    strict=st.booleans(),
)
def test_the_skipped_walk_changes_nothing(parents: list[str | None], strict: bool) -> None:
    lines = [HEADER.encode()] + [
        entry(_IDS[i], parent).encode() for i, parent in enumerate(parents)
    ]
    shortcut = _decode(lines, strict)
    with pytest.MonkeyPatch.context() as patch:
        # The reference: the decoder believes every file may hold a cycle.
        always = property(lambda self: True, lambda self, value: None)
        patch.setattr(jsonl._Decoder, "forward", always, raising=False)
        reference = _decode(lines, strict)
    assert shortcut == reference


def test_a_file_in_order_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[bool] = []
    monkeypatch.setattr(jsonl._Decoder, "break_cycles", lambda self: walked.append(True))
    lines = [HEADER.encode(), entry("a", None).encode(), entry("b", "a").encode()]
    decode_session(lines, source="s.jsonl")
    assert walked == []
    decode_session([*lines, entry("c", "d").encode()], source="s.jsonl")  # forward: walked
    assert walked == [True]
