"""JupyterLab and headless Chromium for the browser tests and ``bench/widget_bench.py``.

``start_lab(base)`` runs ``jupyter lab`` on 127.0.0.1 (a random port and token, root directory
``base/root``, its own config/settings/workspace directories, no update checks or news) and
stops it, kernels included. ``launch_chromium(playwright)`` starts Debian's Chromium (never a
downloaded browser). ``open_notebook_page(...)`` writes a notebook into the server's root, opens
it in a new page and waits for its kernel; the :class:`LabNotebook` it returns runs cells
fire-and-forget through ``window.jupyterapp`` and reads the DOM. Nothing here imports pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

__all__ = [
    "ARTIFACTS",
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "FAUX_IMPORTS",
    "WAIT_MS",
    "LabNotebook",
    "LabServer",
    "close_notebook",
    "launch_chromium",
    "open_notebook_page",
    "start_lab",
    "start_lab_with_labextension",
    "write_notebook",
]

CHROMIUM = os.environ.get("PI_NOTEBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
"""Where screenshots go (git-ignored)."""
WAIT_MS = 60_000
"""Default wait for anything the page should show (generous: CI machines may be loaded)."""
FAUX_IMPORTS = (
    "from pi_notebook.ai import faux_assistant_message, faux_text, faux_tool_call, "
    "register_faux_provider"
)

_SECRET_VARIABLES = ("PI_NOTEBOOK_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY")


# --- the JupyterLab server ----------------------------------------------------------------------


@dataclass(frozen=True)
class LabServer:
    """A running ``jupyter lab``: its base URL, token and root directory."""

    url: str
    token: str
    root: Path
    log: Path

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """Call the server's REST API (``/api/...``) with ``body`` as JSON, if given; the
        decoded JSON answer."""
        headers = {"Authorization": f"token {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers=headers
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def shut_down_sessions(self, paths: Sequence[str]) -> None:
        """Stop the kernels of the notebooks at ``paths`` (relative to the root)."""
        for session in self.api("GET", "/api/sessions"):
            if session.get("path") in paths:
                self.api("DELETE", f"/api/sessions/{session['id']}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _lab_environment(base: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SECRET_VARIABLES}
    env.update(extra or {})
    settings = base / "settings"
    # No "get notified about Jupyter news?" toast, no update check: quiet screenshots.
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    return env


@contextlib.contextmanager
def start_lab(
    base: Path,
    *,
    extra_args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    notebook7: bool = False,
) -> Iterator[LabServer]:
    """Run ``jupyter lab`` with its files under ``base`` until the block ends; ``env`` is added
    to the server's environment, which its kernels inherit. ``notebook7``: ``jupyter notebook``
    (Notebook 7) instead."""
    root = base / "root"
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    token = secrets.token_hex(24)
    log = base / "lab.log"
    app = (
        ["notebook", "--JupyterNotebookApp.expose_app_in_browser=True"]
        if notebook7
        else [
            "jupyterlab",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=None",
        ]
    )
    command = [
        sys.executable,
        "-m",
        app[0],
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        "--allow-root",
        f"--ServerApp.root_dir={root}",
        *app[1:],
        *extra_args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_lab_environment(base, env),
            cwd=root,
            start_new_session=True,  # its own process group: the kernels go down with it
        )
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log)
    try:
        _wait_for_server(server, process)
        yield server
    finally:
        _stop(process)


@contextlib.contextmanager
def start_lab_with_labextension(
    base: Path, labextension: Path, env: dict[str, str] | None = None, *, notebook7: bool = False
) -> Iterator[LabServer]:
    """:func:`start_lab` with ``labextension`` (this checkout's build) first on
    ``JUPYTER_PATH`` (an editable install made elsewhere may hold another build, or none)."""
    data = base / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "pi-notebook-widgets").symlink_to(labextension, target_is_directory=True)
    paths = [str(base / "data"), os.environ.get("JUPYTER_PATH", "")]
    with start_lab(
        base,
        env={"JUPYTER_PATH": os.pathsep.join(p for p in paths if p), **(env or {})},
        notebook7=notebook7,
    ) as server:
        yield server


def _wait_for_server(server: LabServer, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({process.returncode}):\n{server.log_tail()}")
        with contextlib.suppress(OSError, urllib.error.URLError):
            server.api("GET", "/api/status")
            return
        time.sleep(0.2)
    raise RuntimeError(f"jupyter lab did not answer within 120 s:\n{server.log_tail()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # the server shuts its kernels down
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # anything left in the group
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)


# --- the browser ---------------------------------------------------------------------------------


def launch_chromium(playwright: Any) -> Any:
    """Headless Debian Chromium (``PI_NOTEBOOK_CHROMIUM`` overrides the path)."""
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS)
    )


# --- notebooks in a page -------------------------------------------------------------------------

_JS_KERNEL_READY = """
(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return null;
  const panel = Array.from(app.shell.widgets('main')).find(
    (w) => w.context && w.context.path === path && w.content && w.content.widgets);
  if (!panel || !panel.context.isReady) return null;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle' || kernel.connectionStatus !== 'connected') return null;
  return panel.id;
}
"""

# Run commands resolve when execution *finishes*: return null so page.evaluate does not wait.
_JS_RUN_CELL = """
([id, index]) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find((w) => w.id === id);
  app.shell.activateById(id);
  panel.content.activeCellIndex = index;
  panel.content.deselectAll();
  app.commands.execute('notebook:run-cell');
  return null;
}
"""

_JS_SAVE = """
async (id) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find((w) => w.id === id);
  await panel.context.save();
  return null;
}
"""

_JS_CELL_DONE = """
([id, index]) => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find((w) => w.id === id);
  const model = panel.content.widgets[index].model;
  const kernel = panel.sessionContext.session.kernel;
  return model.executionCount !== null && model.executionState !== 'running'
    && kernel.status === 'idle';
}
"""


@dataclass
class LabNotebook:
    """A notebook open in its own page of a JupyterLab."""

    page: Any
    server: LabServer
    path: Path
    panel_id: str
    page_errors: list[str] = field(default_factory=list)
    """Uncaught exceptions in the page."""

    @property
    def name(self) -> str:
        return self.path.relative_to(self.server.root).as_posix()

    @property
    def panel(self) -> Any:
        """The notebook panel (a Playwright locator)."""
        return self.page.locator(f"#{self.panel_id}")

    def cell(self, index: int) -> Any:
        return self.panel.locator(".jp-Cell").nth(index)

    def run(self, index: int) -> None:
        """Start running cell ``index`` and return at once."""
        self.page.evaluate(_JS_RUN_CELL, [self.panel_id, index])

    def wait_cell(self, index: int, timeout: float = WAIT_MS) -> None:
        """Wait until cell ``index`` has run and the kernel is idle again."""
        self.page.wait_for_function(
            _JS_CELL_DONE, arg=[self.panel_id, index], timeout=timeout, polling=100
        )

    def run_and_wait(self, *indexes: int) -> None:
        for index in indexes:
            self.run(index)
            self.wait_cell(index)

    def save(self) -> None:
        """Save the notebook (its file in the server's root)."""
        self.page.evaluate(_JS_SAVE, self.panel_id)

    def save_and_reload(self) -> None:
        """Save the notebook, reload the page and wait for the kernel (the same one: outputs
        and widgets come back from the saved file and the kernel's widget state)."""
        self.save()
        self.reload()

    def reload(self) -> None:
        """Reload the page and wait for the notebook's kernel (whichever it is now)."""
        self.page.reload()
        handle = self.page.wait_for_function(
            _JS_KERNEL_READY, arg=self.name, timeout=120_000, polling=200
        )
        self.panel_id = handle.json_value()

    def output_text(self, index: int) -> str:
        text: str = self.cell(index).locator(".jp-OutputArea").inner_text()
        return text

    def wait_until(self, check: Callable[[], bool], what: str, timeout: float = WAIT_MS) -> None:
        """Poll ``check`` (a predicate reading the page) every 100 ms until it holds."""
        deadline = time.monotonic() + timeout / 1000
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout / 1000:.0f} s waiting for {what}")
            self.page.wait_for_timeout(100)

    def session_entries(self) -> list[dict[str, Any]]:
        """The notebook's pi session file (next to it), as JSON lines."""
        session = self.path.with_name(self.path.name.removesuffix(".ipynb") + ".pi.jsonl")
        lines = session.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def screenshot_page(self, name: str) -> Path:
        """Save the whole page (JupyterLab around the notebook) as ``test-artifacts/<name>``."""
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / name
        self.page.screenshot(path=str(target), animations="disabled")
        return target

    def screenshot_span(self, first: Any, last: Any, name: str) -> Path:
        """Save the part of the page from element ``first`` down to element ``last`` (both
        on screen at once) as ``test-artifacts/<name>``."""
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / name
        first.evaluate("(el) => el.scrollIntoView({block: 'start'})")
        top, bottom = first.bounding_box(), last.bounding_box()
        left = min(top["x"], bottom["x"])
        right = max(top["x"] + top["width"], bottom["x"] + bottom["width"])
        y = max(top["y"], 0)
        clip = {
            "x": left,
            "y": y,
            "width": right - left,
            "height": bottom["y"] + bottom["height"] - y,
        }
        self.page.screenshot(path=str(target), clip=clip, animations="disabled")
        return target

    def screenshot(self, locator: Any, name: str) -> Path:
        """Save an element's screenshot as ``test-artifacts/<name>``."""
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / name
        locator.scroll_into_view_if_needed()
        locator.screenshot(path=str(target), animations="disabled")
        return target


def write_notebook(path: Path, cells: Sequence[str]) -> None:
    """A Python 3 notebook of code ``cells``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)


def open_notebook_page(
    browser: Any,
    server: LabServer,
    name: str,
    cells: Sequence[str] | None,
    *,
    viewport: tuple[int, int] = (1280, 1000),
    before_load: Callable[[Any], None] | None = None,
) -> LabNotebook:
    """Write ``cells`` as ``name`` in the server's root (None: open the notebook already
    there), open it in a new browser context and wait until its kernel is idle.
    ``before_load(page)`` runs before navigation (to attach listeners). Close it with
    :func:`close_notebook`."""
    path = server.root / name
    if cells is not None:
        write_notebook(path, cells)
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    notebook = LabNotebook(page, server, path, "")
    page.on("pageerror", lambda error: notebook.page_errors.append(f"{name}: {error}"))
    if before_load is not None:
        before_load(page)
    page.goto(f"{server.url}/lab/tree/{name}?reset&token={server.token}")
    handle = page.wait_for_function(_JS_KERNEL_READY, arg=name, timeout=120_000, polling=200)
    notebook.panel_id = handle.json_value()
    return notebook


def close_notebook(notebook: LabNotebook) -> None:
    """Close the notebook's page and stop its kernel."""
    with contextlib.suppress(Exception):
        notebook.page.context.close()
    with contextlib.suppress(Exception):
        notebook.server.shut_down_sessions([notebook.name])


@contextlib.contextmanager
def notebook_opener(browser: Any, server: LabServer) -> Iterator[Callable[..., LabNotebook]]:
    """``open_(name, cells)`` → a :class:`LabNotebook` whose kernel is idle; on exit every
    opened notebook is closed, and uncaught errors in their pages fail the test."""
    opened: list[LabNotebook] = []

    def open_(name: str, cells: Sequence[str] | None) -> LabNotebook:
        notebook = open_notebook_page(browser, server, name, cells)
        opened.append(notebook)
        return notebook

    yield open_
    errors = [error for notebook in opened for error in notebook.page_errors]
    for notebook in opened:
        close_notebook(notebook)
    assert not errors, "uncaught errors in the page:\n" + "\n".join(errors)
