"""Real-browser fixtures: one JupyterLab server and one headless Chromium for the browser tests
(machinery in :mod:`tests.browser.lab`).

Both are package-scoped, not session-scoped: Playwright's sync API keeps an asyncio loop running
on the main thread while it is open, and pytest-asyncio cannot run the other tests' loops beside
it, so the browser must be closed when the browser tests are done.

``open_notebook(name, cells)`` writes a notebook into the server's root, opens it in a new page
and waits for its kernel; pages and kernels are closed when the test ends, and a test fails if
its page had an uncaught error. Waits poll the page with generous timeouts: the machine may be
loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .lab import (
    LabNotebook,
    LabServer,
    launch_chromium,
    notebook_opener,
    start_lab,
    start_lab_with_labextension,
)

LABEXTENSION = Path(__file__).resolve().parents[2] / "pi_notebook" / "labextension"
"""This checkout's build of the labextension."""

playwright_sync = pytest.importorskip("playwright.sync_api")
pytest.importorskip("jupyterlab")


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One JupyterLab server for the browser tests (stopped, kernels included, at the end)."""
    with start_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright, one for the browser tests."""
    with playwright_sync.sync_playwright() as pw:
        try:
            launched = launch_chromium(pw)
        except FileNotFoundError as exc:
            pytest.skip(str(exc))
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def open_notebook(lab: LabServer, browser: Any) -> Iterator[Callable[..., LabNotebook]]:
    """``open_notebook(name, cells)`` → a :class:`LabNotebook` whose kernel is idle."""
    with notebook_opener(browser, lab) as open_:
        yield open_


@pytest.fixture(scope="module")
def extension_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A JupyterLab that loads this checkout's labextension (one per test module)."""
    if not (LABEXTENSION / "package.json").exists():
        pytest.fail("pi_notebook/labextension is missing: run `npm run build --prefix js`")
    with start_lab_with_labextension(tmp_path_factory.mktemp("ext-lab"), LABEXTENSION) as server:
        yield server


@pytest.fixture
def open_with_extension(
    extension_lab: LabServer, browser: Any
) -> Iterator[Callable[..., LabNotebook]]:
    """``open_notebook`` for :func:`extension_lab`."""
    with notebook_opener(browser, extension_lab) as open_:
        yield open_
