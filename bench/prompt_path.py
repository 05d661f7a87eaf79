"""How many of the package's files one prompt crosses, from the ``%%agent`` magic to the HTTP
request.

A real kernel (nbclient) runs ``%%agent --wait`` twice against an OpenAI-style server on 127.0.0.1
(``bench/sse_server.py``): the first run imports what a run needs, the second is traced with
``sys.setprofile``. Tracing starts when the magic's function is called and stops when the request
reaches httpx (``AsyncClient.send``). Counted: every ``pi_notebook`` file in which a function ran
meanwhile (module bodies left out), and the distinct caller → callee pairs of those files (the
file boundaries). Threads are not traced (the kernel's own work on other threads is not the
prompt's path).

    python3 -m bench.prompt_path            # prints the counts and the files in call order
    python3 -m bench.prompt_path --json     # one JSON line
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from tests.notebook.kernel_notebook import execute, outputs_text

from .sse_server import serve_in_subprocess

_SETUP = """\
import asyncio, pi_notebook, sys
from pi_notebook.ai import Model
agent = pi_notebook.current()
model = Model(id="m", api="openai-completions", provider="custom", base_url={url!r})
await agent.ensure_harness(model)
"""

_TRACE = """\
_package = pi_notebook.__file__.rsplit("/", 1)[0] + "/"
_files: list[str] = []
_edges: set[tuple[str, str]] = set()
_creators: dict[int, list[tuple[str, str]]] = {}
_state = {"on": False, "done": False, "chain": []}

def _stack(frame):
    # The frames from the task's first coroutine to ``frame``, continued through the frames
    # that created the task (so a hand-off through a task is one path), outermost first.
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    chain = [(f.f_code.co_filename, f.f_code.co_name) for f in reversed(frames)]
    try:
        task = asyncio.current_task()
    except RuntimeError:
        task = None
    return (_creators.get(id(task.get_coro()), []) if task is not None else []) + chain

def _profile(frame, event, arg):
    if event != "call" or _state["done"]:
        return
    code = frame.f_code
    path = code.co_filename
    if not _state["on"]:
        if code.co_name == "agent" and path.endswith("/notebook/magics/core.py"):
            _state["on"] = True
        else:
            return
    if code.co_name == "create_task" and path.endswith("/asyncio/base_events.py"):
        coro = frame.f_locals.get("coro")
        if coro is not None:
            _creators[id(coro)] = _stack(frame.f_back)
        return
    if code.co_name == "send" and path.endswith("/httpx/_client.py"):
        _state["done"] = True
        _state["chain"] = _stack(frame)
        sys.setprofile(None)
        return
    if not path.startswith(_package) or code.co_name == "<module>":
        return
    name = path[len(_package):]
    if name not in _files:
        _files.append(name)
    caller = frame.f_back
    if caller is not None and caller.f_code.co_filename.startswith(_package):
        source = caller.f_code.co_filename[len(_package):]
        if source != name:
            _edges.add((source, name))

sys.setprofile(_profile)
"""

_REPORT = """\
import json
_path = [(f[len(_package):], n) for f, n in _state["chain"] if f.startswith(_package)]
print("RESULT " + json.dumps(
    {"files": _files, "edges": sorted(_edges), "done": _state["done"], "path": _path}
))
"""


def trace_prompt() -> dict[str, Any]:
    with serve_in_subprocess() as base, tempfile.TemporaryDirectory() as tmp:
        url = f"{base}/n/3/v1"
        nb = execute(
            [
                "%load_ext pi_notebook",
                _SETUP.format(url=url),
                "%%agent --wait\nwarm up",
                _TRACE,
                "%%agent --wait\nSay hello",
                _REPORT,
            ],
            Path(tmp),
            env={"JPY_SESSION_NAME": "trace.ipynb", "PI_NOTEBOOK_CONTEXT": "off"},
            timeout=120,
        )
        text = outputs_text(nb.cells[5])
    line = next(line for line in text.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    if not result["done"]:
        raise RuntimeError("the traced prompt never reached httpx")
    return result


def path_summary(path: list[list[str]]) -> tuple[list[str], int]:
    """The files of the causal path in order (each once) and how often the path changes file."""
    files: list[str] = []
    boundaries = 0
    previous: str | None = None
    for name, _function in path:
        if name not in files:
            files.append(name)
        if previous is not None and name != previous:
            boundaries += 1
        previous = name
    return files, boundaries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    result = trace_prompt()
    files, boundaries = path_summary(result["path"])
    touched, edges = result["files"], result["edges"]
    if args.json:
        summary = {
            "path_files": len(files),
            "path_boundaries": boundaries,
            "touched_files": len(touched),
            "touched_pairs": len(edges),
            "path": [f"{name}:{function}" for name, function in result["path"]],
        }
        print(json.dumps(summary))
        return
    print(f"path to the request: {len(files)} files, {boundaries} file boundaries")
    for name, function in result["path"]:
        print(f"  {name}  {function}")
    pairs = len(edges)
    print(
        f"files in which any function ran meanwhile: {len(touched)} ({pairs} caller/callee pairs)"
    )
    for name in touched:
        print(f"  {name}")


if __name__ == "__main__":
    main()
