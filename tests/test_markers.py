"""The suite's own markers: ``local_llm`` tests skip by themselves without the ``local`` extra."""

from __future__ import annotations

import pytest

from tests import conftest


def test_local_llm_tests_skip_where_xllamacpp_is_missing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conftest.local, "local_model_available", lambda: False)
    conftest._local_model_available.cache_clear()
    try:
        pytester.makeconftest("from tests.conftest import pytest_runtest_setup")
        pytester.makeini(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
            "markers =\n    local_llm: needs the local model\n"
        )
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.local_llm
            def test_needs_the_model():
                raise AssertionError("ran without the local model")

            def test_plain():
                pass
            """
        )
        result = pytester.runpytest_inprocess("-rs")
    finally:
        conftest._local_model_available.cache_clear()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*xllamacpp is not installed*"])
