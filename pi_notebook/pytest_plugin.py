"""pytest plugin: executed notebooks as tests (registered as ``pi_notebook.pytest_plugin``).

With ``--pi-notebooks`` (or ``pi_notebooks = true`` in the ini file), every ``*.ipynb`` file pytest
collects becomes one test: the notebook is executed by ``pi_notebook.testing.run_notebook`` —
replaying its cassette when it has one — and the test fails on any cell error or on a run that
failed inside a run view. Without the option the plugin collects nothing.

    pytest --pi-notebooks notebooks/

The ``run_notebook`` fixture runs a notebook in the test's temporary directory, for tests that
assert more about it::

    def test_tools(run_notebook):
        nb = run_notebook("notebooks/tools.ipynb").check()
        assert nb.run_views[0]["status"] == "done"
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["NotebookFile", "NotebookItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pi_notebook", "executed notebooks")
    group.addoption(
        "--pi-notebooks",
        action="store_true",
        default=None,
        help="collect *.ipynb files as tests (run with pi_notebook.testing.run_notebook)",
    )
    group.addoption(
        "--pi-notebook-speed",
        type=float,
        default=None,
        help="replay pace of notebook cassettes (1 = as recorded, 0 = instant)",
    )
    parser.addini("pi_notebooks", "collect *.ipynb files as tests", type="bool", default=False)
    parser.addini(
        "pi_notebook_timeout", "seconds each notebook cell may take", type="string", default="120"
    )


def _enabled(config: pytest.Config) -> bool:
    option = config.getoption("--pi-notebooks")
    return bool(option) if option is not None else bool(config.getini("pi_notebooks"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".ipynb" or ".ipynb_checkpoints" in file_path.parts:
        return None
    if not _enabled(parent.config):
        return None
    collected: NotebookFile = NotebookFile.from_parent(parent, path=file_path)
    return collected


class NotebookFile(pytest.File):
    """A notebook file: one test that executes it."""

    def collect(self) -> Iterator[pytest.Item]:
        yield NotebookItem.from_parent(self, name=self.path.name)


class NotebookItem(pytest.Item):
    """Executes one notebook and checks it."""

    def runtest(self) -> None:
        from .testing import run_notebook

        timeout = int(str(self.config.getini("pi_notebook_timeout")))
        speed = self.config.getoption("--pi-notebook-speed")
        result = run_notebook(self.path, speed=speed, timeout=timeout)
        self.add_report_section("call", "notebook", f"executed copy: {result.path}")
        result.check()

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        from .testing import NotebookFailure

        if isinstance(excinfo.value, NotebookFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, None, f"notebook {self.path.name}"


@pytest.fixture
def run_notebook(tmp_path: Path) -> Callable[..., Any]:
    """``run_notebook(path, **options)``: ``pi_notebook.testing.run_notebook`` with the test's
    temporary directory as the working directory (one subdirectory per call)."""
    from .testing import run_notebook as run

    calls = 0

    def run_here(path: str | os.PathLike[str], **options: Any) -> Any:
        nonlocal calls
        calls += 1
        options.setdefault("workdir", tmp_path / f"run{calls}")
        return run(path, **options)

    return run_here
