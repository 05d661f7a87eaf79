"""Fixtures for every test: a faux provider per test and the embedded local model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pi_notebook.ai import FauxProvider, Model, local, register_faux_provider


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = register_faux_provider()
    yield provider
    provider.unregister()


@pytest.fixture(scope="session")
def local_model() -> Iterator[Model]:
    """The embedded SmolLM2 server (``pi_notebook.ai.local``), started once per test session;
    its ``openai-completions`` Model. For tests marked ``local_llm``."""
    if not local.local_model_available():
        pytest.skip('xllamacpp is not installed: pip install "pi-notebook[local]"')
    model = local.start_local_model()
    yield model
    local.stop_local_model()
