"""The notebook's default model: PI_NOTEBOOK_MODEL, then API keys, then the local model."""

from __future__ import annotations

import pytest

from pi_notebook.ai.models import get_model
from pi_notebook.notebook import default_model
from pi_notebook.notebook.default_model import (
    NoModelError,
    model_from_api_keys,
    resolve_default_model,
)


def test_api_keys_pick_the_first_provider_in_preference_order() -> None:
    assert model_from_api_keys({}) is None
    only_openai = model_from_api_keys({"OPENAI_API_KEY": "sk-x"})
    assert only_openai is not None and only_openai.provider == "openai"
    both = model_from_api_keys({"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-y"})
    assert both is not None and both.ref == "anthropic/claude-sonnet-4-5"
    assert model_from_api_keys({"OPENAI_API_KEY": ""}) is None


def test_every_provider_default_is_in_the_catalogue() -> None:
    for provider, model_id in default_model.PROVIDER_DEFAULTS.items():
        assert get_model(provider, model_id).id == model_id


async def test_configured_model_wins() -> None:
    env = {"PI_NOTEBOOK_MODEL": "openai/gpt-5.1", "ANTHROPIC_API_KEY": "k"}
    assert (await resolve_default_model(env)).ref == "openai/gpt-5.1"


async def test_bad_configured_model_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="PROVIDER/MODEL-ID"):
        await resolve_default_model({"PI_NOTEBOOK_MODEL": "nonsense"})


async def test_without_keys_or_local_model_the_error_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(default_model, "local_model_available", lambda: False)
    with pytest.raises(NoModelError, match="%model PROVIDER/MODEL-ID"):
        await resolve_default_model({})
