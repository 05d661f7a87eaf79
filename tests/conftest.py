"""Shared fixtures: golden files from ../shared, a faux provider per test, the local model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import FauxProvider, Model, local, register_faux_provider

ROOT = Path(__file__).resolve().parent.parent


def _find_shared() -> Path:
    for candidate in (ROOT.parent / "shared", ROOT / "shared"):
        if (candidate / "golden").is_dir():
            return candidate
    raise RuntimeError("../shared/golden not found next to the repository")


SHARED = _find_shared()
GOLDEN = SHARED / "golden"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


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
