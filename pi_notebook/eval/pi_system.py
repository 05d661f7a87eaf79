"""pi_notebook under test: each task is an executed notebook in a fresh kernel (nbclient, as
``pi_notebook.testing`` runs one), exactly as a user's would run headless.

The notebook has two cells: ``%load_ext pi_notebook`` with ``%tools add run_python`` (the
code-running tool, off by default), and the question in a ``%%agent --wait`` cell. The rest is
set from the kernel's environment, as for any executed notebook: the model
(``PI_NOTEBOOK_MODEL``), the approval policy (``PI_NOTEBOOK_APPROVE=run_python=allow``: no
frontend, so nobody could click Allow) and the change summary off (``PI_NOTEBOOK_CONTEXT=off``:
it would describe the setup cell as the user's work). A model the harness serves is registered by
an IPython startup file (``IPYTHONDIR`` in the task's directory), not by a cell: the agent's
notebook tools would show such a cell to the model. Everything else — system prompt, the default
read tools, the run loop — is the product's default.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from ..testing import _nbformat, record_notebook, run_notebook
from .models import ModelSpec
from .tasks import Task, task_prompt
from .transcript import Step, Transcript, reports_exception

__all__ = [
    "PI_ENV",
    "PI_SETUP",
    "CassetteMode",
    "kernel_setup",
    "run_pi_notebook",
    "task_notebook",
    "transcript_from_session",
]

CassetteMode = Literal["record", "replay"]
PI_SETUP = "%load_ext pi_notebook\n%tools add run_python"
"""The notebook's first cell."""
PI_ENV = {"PI_NOTEBOOK_APPROVE": "run_python=allow", "PI_NOTEBOOK_CONTEXT": "off"}
"""The kernel's environment: no frontend, so the code-running tool is allowed by policy."""
_CODE_TOOLS = ("run_python",)


def _escape(text: str) -> str:
    # %%agent fills {name} from the notebook's variables; a question's braces are literal.
    return text.replace("{", "{{").replace("}", "}}")


def kernel_setup(spec: ModelSpec, directory: Path) -> dict[str, str]:
    """The kernel's environment for ``spec``; a served model gets a startup file under
    ``directory`` that registers it."""
    env = {**PI_ENV, "PI_NOTEBOOK_MODEL": spec.kernel_ref}
    if spec.served is not None:
        startup = directory / "profile_default" / "startup"
        startup.mkdir(parents=True, exist_ok=True)
        (startup / "00-pi-notebook-eval.py").write_text(
            "# Written by pi_notebook.eval: the model the harness serves.\n"
            "from pi_notebook.ai import register_model\n"
            "from pi_notebook.ai.types import Model\n\n"
            f"register_model(Model.model_validate_json({spec.served.model_dump_json()!r}))\n",
            encoding="utf-8",
        )
        env["IPYTHONDIR"] = str(directory)
    return env


def task_notebook(task: Task) -> Any:
    """The notebook that asks ``task``."""
    nbformat = _nbformat()
    cells = [
        nbformat.v4.new_code_cell(PI_SETUP),
        nbformat.v4.new_code_cell("%%agent --wait\n" + _escape(task_prompt(task))),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def transcript_from_session(path: Path) -> Transcript:
    """What a task's session file says the agent did (its seconds and time limit are not in
    it)."""
    from ..ai.types import AssistantMessage, TextContent, ToolResultMessage
    from ..harness import Session

    transcript = Transcript()
    if not path.is_file():
        transcript.error = "the run left no session file"
        return transcript
    session = Session.open(path, strict=False)
    calls: dict[str, tuple[str, str]] = {}
    for entry in session.get_entries():
        message = getattr(entry, "message", None)
        if isinstance(message, AssistantMessage):
            transcript.turns += 1
            transcript.tokens_in += message.usage.input + message.usage.cache_read
            transcript.tokens_out += message.usage.output
            transcript.cost += message.usage.cost.total
            if message.text.strip():
                transcript.reply = message.text
            if message.stop_reason == "error" and message.error_message:
                transcript.error = message.error_message
            for call in message.tool_calls:
                code = call.arguments.get("code") if call.name in _CODE_TOOLS else None
                calls[call.id] = (call.name, code if isinstance(code, str) else "")
        elif isinstance(message, ToolResultMessage):
            name, code = calls.get(message.tool_call_id, (message.tool_name, ""))
            text = "".join(b.text for b in message.content if isinstance(b, TextContent))
            failed = message.is_error or reports_exception(text)
            transcript.steps.append(Step(name, code, text, failed))
    return transcript


def run_pi_notebook(
    task: Task,
    spec: ModelSpec,
    workdir: Path,
    *,
    time_limit: float,
    cassette: Path | None = None,
    mode: CassetteMode | None = None,
) -> Transcript:
    """Run ``task`` in a fresh kernel under ``workdir`` (which keeps the executed notebook and
    its session file). ``cassette`` with ``mode``: record the model's replies there, or replay
    them (no model needed)."""
    nbformat = _nbformat()
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "source" / f"{task.id}.ipynb"
    source.parent.mkdir(exist_ok=True)
    nbformat.write(task_notebook(task), source)
    for file in task.files:  # the data files sit next to the notebook in its working directory
        (source.parent / file.name).write_bytes(file.read_bytes())
    run_dir = workdir / "run"
    common: dict[str, Any] = {
        "env": kernel_setup(spec, workdir / "ipython"),
        "workdir": run_dir,
        "include": list(task.file_names),
        "timeout": max(1, round(time_limit)),
    }
    started = time.monotonic()
    if mode == "record" and cassette is not None:
        done = record_notebook(source, cassette=cassette, **common)
    elif mode == "replay" and cassette is not None:
        done = run_notebook(source, cassette=cassette, speed=0, **common)
    else:
        done = run_notebook(source, cassette=None, keep_keys=True, **common)
    transcript = transcript_from_session(done.session_path)
    transcript.seconds = time.monotonic() - started
    stopped = done.stopped_by
    if stopped is not None:
        if stopped.ename == "CellTimeoutError":
            transcript.timed_out = True
        elif not transcript.error:
            transcript.error = f"{stopped.ename}: {stopped.evalue}"
    failed = done.failed_runs
    if failed and not transcript.error:
        transcript.error = failed[-1]
    return transcript
