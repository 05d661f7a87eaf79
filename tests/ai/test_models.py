"""The model catalogue (catalogue.json through its loader), lookups, custom models, env keys and
thinking levels."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from pi_notebook.ai import (
    Model,
    clamp_thinking_level,
    custom_model,
    get_env_api_key,
    get_model,
    get_models,
    get_providers,
    models_are_equal,
    parse_model,
    register_model,
    supported_thinking_levels,
)
from pi_notebook.ai import models as models_module

BUILTIN_APIS = {
    "openai-completions",
    "anthropic-messages",
    "openai-responses",
    "google-generative-ai",
}
PROVIDERS = ["anthropic", "openai", "google", "groq", "openrouter", "deepseek", "xai", "mistral"]
COMPAT_KEYS = {
    "maxTokensField",
    "supportsDeveloperRole",
    "supportsStore",
    "supportsReasoningEffort",
    "supportsUsageInStreaming",
    "thinkingFormat",
    "requiresToolResultName",
    "requiresThinkingAsText",
}


@pytest.fixture(autouse=True)
def _isolated_registrations(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``register_model`` is process-wide: give each test its own table of custom models."""
    monkeypatch.setattr(models_module, "_custom", {})
    yield


def _raw_catalogue() -> dict[str, Any]:
    text = resources.files("pi_notebook.ai").joinpath("catalogue.json").read_text("utf-8")
    raw: dict[str, Any] = json.loads(text)
    return raw


# --- the catalogue file ----------------------------------------------------------------------


def test_catalogue_has_the_curated_providers_in_order() -> None:
    assert get_providers() == PROVIDERS
    for provider in PROVIDERS:
        assert 2 <= len(get_models(provider)) <= 12, provider


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_entry_validates_and_is_sane(provider: str) -> None:
    raw = _raw_catalogue()["providers"][provider]
    ids = [entry["id"] for entry in raw["models"]]
    assert len(ids) == len(set(ids)), f"duplicate ids in {provider}"
    for model in get_models(provider):
        # Re-validate from JSON: the loaded object round-trips through pi's camelCase shape.
        again = Model.model_validate(model.to_json_dict())
        assert again == model
        assert model.provider == provider
        assert model.api in BUILTIN_APIS
        assert model.base_url.startswith("https://")
        assert model.name and model.id
        assert model.input and set(model.input) <= {"text", "image"} and "text" in model.input
        assert model.context_window >= 8192
        assert 0 < model.max_tokens <= model.context_window
        costs = model.cost
        rates = (costs.input, costs.output, costs.cache_read, costs.cache_write)
        assert all(rate >= 0 for rate in rates), model.ref
        assert costs.output >= costs.input > 0
        assert costs.cache_read <= costs.input
        if model.compat is not None:
            assert set(model.compat) <= COMPAT_KEYS, model.ref
        for level in supported_thinking_levels(model):
            assert clamp_thinking_level(model, level) == level


def test_each_entry_has_the_fields_pi_lists() -> None:
    required = {"id", "name", "reasoning", "input", "cost", "contextWindow", "maxTokens"}
    for provider, block in _raw_catalogue()["providers"].items():
        assert block["api"] in BUILTIN_APIS and block["baseUrl"].startswith("https://")
        for entry in block["models"]:
            assert required <= set(entry), f"{provider}/{entry.get('id')}"
            assert set(entry["cost"]) == {"input", "output", "cacheRead", "cacheWrite"}


def test_claude_sonnet_4_5_matches_the_spec_example() -> None:
    model = get_model("anthropic", "claude-sonnet-4-5")
    assert model.api == "anthropic-messages"
    assert model.base_url == "https://api.anthropic.com"
    assert model.reasoning is True and model.input == ["text", "image"]
    assert (model.cost.input, model.cost.output) == (3, 15)
    assert (model.cost.cache_read, model.cost.cache_write) == (0.3, 3.75)
    assert (model.context_window, model.max_tokens) == (200_000, 64_000)
    assert model.to_json_dict()["contextWindow"] == 200_000


@pytest.mark.parametrize(
    ("provider", "api", "base_url"),
    [
        ("anthropic", "anthropic-messages", "https://api.anthropic.com"),
        ("openai", "openai-responses", "https://api.openai.com/v1"),
        ("google", "google-generative-ai", "https://generativelanguage.googleapis.com/v1beta"),
        ("groq", "openai-completions", "https://api.groq.com/openai/v1"),
        ("openrouter", "openai-completions", "https://openrouter.ai/api/v1"),
        ("deepseek", "openai-completions", "https://api.deepseek.com"),
        ("xai", "openai-completions", "https://api.x.ai/v1"),
        ("mistral", "openai-completions", "https://api.mistral.ai/v1"),
    ],
)
def test_provider_defaults_reach_every_model(provider: str, api: str, base_url: str) -> None:
    for model in get_models(provider):
        assert (model.api, model.base_url) == (api, base_url)
        if api == "openai-completions":
            assert model.compat is not None
            assert model.compat["supportsStore"] is False
            assert model.compat["maxTokensField"] in {"max_tokens", "max_completion_tokens"}


def test_thinking_formats_of_compatible_providers() -> None:
    deepseek = get_model("deepseek", "deepseek-reasoner")
    assert deepseek.compat is not None and deepseek.compat["thinkingFormat"] == "deepseek"
    openrouter = get_model("openrouter", "anthropic/claude-sonnet-4.5")
    assert openrouter.compat is not None and openrouter.compat["thinkingFormat"] == "openrouter"


def test_model_compat_merges_over_provider_compat() -> None:
    gpt_oss = get_model("groq", "openai/gpt-oss-120b").compat
    llama = get_model("groq", "llama-3.3-70b-versatile").compat
    assert gpt_oss is not None and llama is not None
    assert gpt_oss["supportsReasoningEffort"] is True and llama["supportsReasoningEffort"] is False
    # The rest of the provider's flags survive the model's override.
    assert gpt_oss["maxTokensField"] == llama["maxTokensField"] == "max_completion_tokens"


@pytest.mark.parametrize(
    ("entries", "message"),
    [([{"id": "x", "input": "?"}], "bad entry acme/x"), ([{"id": "x"}, {"id": "x"}], "duplicate")],
)
def test_loader_names_the_bad_entry(entries: list[dict[str, Any]], message: str) -> None:
    text = json.dumps({"providers": {"acme": {"api": "openai-completions", "models": entries}}})
    models_module._catalogue.cache_clear()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(models_module, "resources", _FakeResources(text))
            with pytest.raises(ValueError, match=message):
                get_providers()
    finally:
        models_module._catalogue.cache_clear()
    assert "anthropic" in get_providers()


class _FakeResources:
    """Stands in for ``importlib.resources`` so the loader reads a given catalogue text."""

    def __init__(self, text: str) -> None:
        self._text = text

    def files(self, package: str | None) -> _FakeResources:
        return self

    def joinpath(self, name: str) -> _FakeResources:
        return self

    def read_text(self, encoding: str = "utf-8") -> str:
        return self._text


# --- lookups ----------------------------------------------------------------------------------


def test_get_models_of_all_providers_is_the_union() -> None:
    everything = get_models()
    assert len(everything) == sum(len(get_models(p)) for p in get_providers())
    assert len({m.ref for m in everything}) == len(everything)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"Unknown provider 'nope'.*anthropic"):
        get_models("nope")
    with pytest.raises(KeyError, match="Unknown provider"):
        get_model("nope", "x")


def test_unknown_model_suggests_near_ids() -> None:
    with pytest.raises(KeyError, match=r"Did you mean: .*claude-sonnet-4-5"):
        get_model("anthropic", "claude-sonnet-4.5")
    with pytest.raises(KeyError, match=r"Unknown model anthropic/sonnet.*claude-sonnet"):
        get_model("anthropic", "sonnet")
    with pytest.raises(KeyError, match=r"Known: .*deepseek-chat"):
        get_model("deepseek", "zzzzzzzz")


def test_parse_model_plain_and_with_slashes_in_the_id() -> None:
    assert parse_model("anthropic/claude-sonnet-4-5") == get_model("anthropic", "claude-sonnet-4-5")
    routed = parse_model("openrouter/anthropic/claude-sonnet-4.5")
    assert (routed.provider, routed.id) == ("openrouter", "anthropic/claude-sonnet-4.5")
    assert parse_model("  groq/openai/gpt-oss-20b \n").id == "openai/gpt-oss-20b"
    assert parse_model(routed.ref) == routed


@pytest.mark.parametrize(
    "ref", ["", "claude-sonnet-4-5", "anthropic/", "/claude-sonnet-4-5", " / "]
)
def test_parse_model_rejects_malformed_refs(ref: str) -> None:
    with pytest.raises(ValueError, match="Expected PROVIDER/MODEL-ID"):
        parse_model(ref)


def test_parse_model_unknown_parts_raise_key_error() -> None:
    with pytest.raises(KeyError, match="Unknown provider"):
        parse_model("acme/model")
    with pytest.raises(KeyError, match="Unknown model openai/gpt-99"):
        parse_model("openai/gpt-99")


def test_parse_model_rejects_non_strings() -> None:
    with pytest.raises(TypeError, match="provider/model-id"):
        parse_model(42)  # type: ignore[arg-type]


def test_models_are_equal_compares_id_and_provider_only() -> None:
    model = get_model("openai", "gpt-5")
    assert models_are_equal(model, model.model_copy(update={"name": "renamed", "max_tokens": 1}))
    assert not models_are_equal(model, get_model("openai", "gpt-5-mini"))
    assert not models_are_equal(model, None) and not models_are_equal(None, None)


# --- custom and registered models -------------------------------------------------------------


def test_custom_model_for_an_openai_compatible_server() -> None:
    model = custom_model("llama3.2", "http://localhost:11434/v1/", provider="ollama")
    assert (model.id, model.name, model.provider) == ("llama3.2", "llama3.2", "ollama")
    assert model.api == "openai-completions"
    assert model.base_url == "http://localhost:11434/v1"
    assert model.compat == {
        "maxTokensField": "max_tokens",
        "supportsDeveloperRole": False,
        "supportsStore": False,
        "supportsReasoningEffort": False,
    }
    assert model.cost.input == 0 and model.input == ["text"]


def test_custom_model_fields_and_compat_overrides() -> None:
    model = custom_model(
        "qwen",
        "http://127.0.0.1:8000/v1",
        name="Qwen on vLLM",
        context_window=32_768,
        max_tokens=4096,
        reasoning=True,
        input=["text", "image"],
        compat={"supportsDeveloperRole": True, "thinkingFormat": "qwen"},
    )
    assert model.name == "Qwen on vLLM" and model.provider == "custom"
    assert (model.context_window, model.max_tokens, model.reasoning) == (32_768, 4096, True)
    assert model.compat is not None
    assert model.compat["supportsDeveloperRole"] is True
    assert model.compat["thinkingFormat"] == "qwen"
    assert model.compat["maxTokensField"] == "max_tokens"


def test_custom_model_with_another_api_keeps_compat_unset() -> None:
    model = custom_model("claude-proxy", "https://proxy.example", api="anthropic-messages")
    assert model.api == "anthropic-messages" and model.compat is None


@pytest.mark.parametrize(("model_id", "base_url"), [("", "http://x"), ("m", "localhost:8080")])
def test_custom_model_rejects_bad_input(model_id: str, base_url: str) -> None:
    with pytest.raises(ValueError, match="custom_model needs"):
        custom_model(model_id, base_url)


def test_register_model_makes_it_findable() -> None:
    model = custom_model("my-model", "http://127.0.0.1:9999/v1", provider="lab")
    register_model(model)
    assert "lab" in get_providers()
    assert get_model("lab", "my-model") is model
    assert parse_model("lab/my-model") is model
    assert model in get_models()


def test_register_model_can_extend_and_override_a_catalogue_provider() -> None:
    before = len(get_models("anthropic"))
    cheaper = get_model("anthropic", "claude-haiku-4-5").model_copy(
        update={"name": "Haiku (proxy)"}
    )
    register_model(cheaper)
    register_model(Model(id="claude-test", api="anthropic-messages", provider="anthropic"))
    assert get_model("anthropic", "claude-haiku-4-5").name == "Haiku (proxy)"
    assert len(get_models("anthropic")) == before + 1


def test_register_model_rejects_non_models() -> None:
    with pytest.raises(TypeError, match="expects a Model"):
        register_model({"id": "x"})  # type: ignore[arg-type]


# --- API keys from the environment ------------------------------------------------------------


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for names in models_module.PROVIDER_ENV_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ACME_CLOUD_API_KEY", raising=False)
    return monkeypatch


def test_env_api_key_per_provider(no_keys: pytest.MonkeyPatch) -> None:
    assert get_env_api_key("openai") is None
    no_keys.setenv("OPENAI_API_KEY", "sk-openai")
    no_keys.setenv("GROQ_API_KEY", "gsk-groq")
    assert get_env_api_key("openai") == "sk-openai"
    assert get_env_api_key("groq") == "gsk-groq"
    assert get_env_api_key("mistral") is None


def test_env_api_key_order_of_preference(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv("GOOGLE_API_KEY", "google")
    assert get_env_api_key("google") == "google"
    no_keys.setenv("GEMINI_API_KEY", "gemini")
    assert get_env_api_key("google") == "gemini"
    no_keys.setenv("ANTHROPIC_API_KEY", "sk-ant-api")
    no_keys.setenv("ANTHROPIC_OAUTH_TOKEN", "")  # empty counts as unset
    assert get_env_api_key("anthropic") == "sk-ant-api"


def test_env_api_key_of_an_unlisted_provider(no_keys: pytest.MonkeyPatch) -> None:
    assert get_env_api_key("acme-cloud") is None
    no_keys.setenv("ACME_CLOUD_API_KEY", "acme")
    assert get_env_api_key("acme-cloud") == "acme"


def test_every_catalogue_provider_has_an_env_key() -> None:
    assert set(get_providers()) <= set(models_module.PROVIDER_ENV_KEYS)


# --- thinking levels --------------------------------------------------------------------------


def _model(reasoning: bool, level_map: dict[str, str | None] | None = None) -> Model:
    return Model(
        id="m", api="openai-completions", provider="p", reasoning=reasoning,
        thinking_level_map=level_map,
    )  # fmt: skip


def test_supported_levels() -> None:
    assert supported_thinking_levels(_model(False)) == ["off"]
    assert supported_thinking_levels(_model(True)) == ["off", "minimal", "low", "medium", "high"]
    with_xhigh = _model(True, {"xhigh": "xhigh", "minimal": None})
    assert supported_thinking_levels(with_xhigh) == ["off", "low", "medium", "high", "xhigh"]


def test_supported_levels_of_catalogue_models() -> None:
    assert "xhigh" in supported_thinking_levels(get_model("openai", "gpt-5.2"))
    assert "minimal" not in supported_thinking_levels(get_model("openai", "gpt-5.1"))
    assert supported_thinking_levels(get_model("openai", "gpt-4.1")) == ["off"]
    assert "xhigh" not in supported_thinking_levels(get_model("anthropic", "claude-sonnet-4-5"))


def test_clamp_searches_upward_then_downward() -> None:
    assert clamp_thinking_level(_model(False), "high") == "off"
    assert clamp_thinking_level(_model(True), "xhigh") == "high"
    assert clamp_thinking_level(_model(True), "medium") == "medium"
    gaps = _model(True, {"minimal": None, "low": None})
    assert clamp_thinking_level(gaps, "minimal") == "medium"
    top_missing = _model(True, {"high": None, "medium": None})
    assert clamp_thinking_level(top_missing, "high") == "low"
    assert clamp_thinking_level(top_missing, "off") == "off"
