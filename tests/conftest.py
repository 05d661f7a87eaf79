"""Fixtures for every test: a faux provider per test and the embedded local model; tests marked
``local_llm`` skip where the ``local`` extra is not installed."""

from __future__ import annotations

import functools
import inspect
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


HTTP_TRANSPORTS = ("aiohttp", "httpx")


@pytest.fixture(params=HTTP_TRANSPORTS)
def http_transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs once per transport of the providers' shared client
    (``PI_NOTEBOOK_HTTP_TRANSPORT``): a module opts in with
    ``pytestmark = pytest.mark.usefixtures("http_transport")``. Each test has its own event loop,
    so its client is made on that transport; the module's synchronous tests run once."""
    monkeypatch.setenv("PI_NOTEBOOK_HTTP_TRANSPORT", request.param)
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A synchronous test of a module run over both HTTP transports makes no request on the
    shared client (that needs a loop): its ``httpx`` copy is left out."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if (
            callspec is not None
            and callspec.params.get("http_transport") == "httpx"
            and not inspect.iscoroutinefunction(getattr(item, "function", None))
            and "http_transport" not in inspect.signature(item.function).parameters  # type: ignore[attr-defined]
        ):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
