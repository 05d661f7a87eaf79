"""Checkpoints in a real kernel (nbclient): a model on a loopback server (127.0.0.1) asks for
``run_python`` cells; a checkpoint is taken when the ``%%agent`` run starts and after each of
its cells, keyed by the session entry that was the leaf. Unchanged values are stored once, a
value that cannot be pickled is listed with the cell that made it, the environment is never
stored, files get the session file's permissions, and ``%checkpoint on|off|status`` works,
bad input included."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.notebook.kernel_notebook import execute, outputs_text

SERVER = """\
import json, os
import pi_notebook
from pi_notebook.ai import Model
from tests.loopback import LoopbackServer, Reply, sse_chunks
server = LoopbackServer()
await server.__aenter__()

def call(i, code):
    tool = {"index": 0, "id": f"call_{i}", "type": "function",
            "function": {"name": "run_python", "arguments": json.dumps({"code": code})}}
    return Reply.sse(sse_chunks([
        {"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [tool]}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ], done=True))

def answer(text):
    return Reply.sse(sse_chunks([
        {"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ], done=True))

model = Model(id="local-gguf", api="openai-completions", provider="custom",
              base_url=server.url + "/v1", max_tokens=4096)
"""

SETUP = """\
import pandas as pd
df = pd.DataFrame({"a": range(1000), "b": [float(i) / 3 for i in range(1000)]})
log = open("log.txt", "w")
numbers = (i * i for i in range(10))
token = os.environ["CKPT_TEST_API_KEY"]
env_copy = dict(os.environ)
"""

ENV = {
    "JPY_SESSION_NAME": "test.ipynb",
    "PI_NOTEBOOK_CONTEXT": "off",
    "PI_NOTEBOOK_APPROVE": "run_python=allow",
    "CKPT_TEST_API_KEY": "sk-test-0123456789abcdef",
}

MANIFESTS = """\
agent = pi_notebook.current()
await agent.checkpoints.settled()
store = agent.checkpoints.store
rows = []
for m in store.manifests():
    entry = agent.session.get_entry(m.entry_id)
    kind = entry.type + ("/" + entry.message.role if entry.type == "message" else "")
    rows.append({"seq": m.seq, "reason": m.reason, "entry": kind,
                 "values": {n: v.hash for n, v in m.values.items()},
                 "skipped": {n: [s.reason, s.serialisable,
                                 s.origin.source if s.origin else None]
                             for n, s in m.skipped.items()}})
print(json.dumps(rows))
"""


def run(tmp_path: Path, cells: list[str], **kwargs: object) -> list[str]:
    nb = execute(
        [
            SERVER,
            "%load_ext pi_notebook\n%tools add run_python",
            *cells,
            "await server.__aexit__(None, None, None)",
        ],
        tmp_path,
        env=ENV,
        timeout=120,
        **kwargs,  # type: ignore[arg-type]
    )
    return [outputs_text(cell) for cell in nb.cells]


def test_checkpoints_at_run_start_and_after_each_agent_cell(tmp_path: Path) -> None:
    texts = run(
        tmp_path,
        [
            SETUP,
            "server.add(call(1, 'total = int(df.a.sum())'), call(2, 'df2 = df.head(3)'),"
            " answer('done'))\n"
            "await pi_notebook.current().ensure_harness(model)",
            "%%agent --wait\nAdd things.",
            MANIFESTS,
            "%checkpoint status",
        ],
    )
    assert "Traceback" not in "".join(texts), texts
    rows = json.loads(texts[-3])
    assert [(r["reason"], r["entry"]) for r in rows] == [
        ("run_start", "custom"),  # the leaf before the prompt: the approval policy's entry
        ("cell", "message/toolResult"),
        ("cell", "message/toolResult"),
    ]
    first, after_one, after_two = (r["values"] for r in rows)
    assert "total" not in first and after_one["total"] and "df2" in after_two
    # the DataFrame did not change: each checkpoint names the same object, stored once
    assert first["df"] == after_one["df"] == after_two["df"]
    objects = [p for p in (tmp_path / "test.pi.ckpt" / "objects").rglob("*") if p.is_file()]
    assert len(objects) == len({h for r in rows for h in r["values"].values()})
    skipped = rows[-1]["skipped"]
    assert skipped["log"][1] is False and "open file" in skipped["log"][0]
    assert skipped["log"][2].splitlines()[2] == 'log = open("log.txt", "w")'
    assert skipped["numbers"][1] is False and "generator" in skipped["numbers"][0]
    assert "numbers = (i * i" in skipped["numbers"][2]
    for name in ("token", "env_copy"):
        assert skipped[name] == ["environment variables are never stored", True, None]
    # no secret in any stored file
    for path in (tmp_path / "test.pi.ckpt").rglob("*"):
        if path.is_file():
            assert b"sk-test-0123456789abcdef" not in path.read_bytes()
    status = texts[-2]
    assert "Checkpoints: on" in status and "3 checkpoints" in status
    assert "skipped log (_io.TextIOWrapper): cannot be pickled" in status
    assert "made by In [" in status
    # files and folders take the session file's permissions
    session_mode = stat.S_IMODE((tmp_path / "test.pi.jsonl").stat().st_mode)
    for path in (tmp_path / "test.pi.ckpt").rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_file():
            assert mode == session_mode, path
        else:
            assert mode & session_mode == session_mode, path


def test_checkpoint_switch_is_kept_in_the_session_and_bad_input_is_one_line(
    tmp_path: Path,
) -> None:
    texts = run(
        tmp_path,
        [
            "%checkpoint off",
            "server.add(call(1, 'x = 1'), answer('done'))\n"
            "await pi_notebook.current().ensure_harness(model)",
            "%%agent --wait\nGo.",
            MANIFESTS,
            "%checkpoint",
            "%checkpoint sometimes",
            "%checkpoint on off",
        ],
        allow_errors=True,
    )
    assert "checkpoints: off (test.pi.ckpt/ beside the session file)" in texts[2]
    assert json.loads(texts[5]) == []  # no checkpoint while off
    assert "Checkpoints: off" in texts[6] and "0 checkpoints" in texts[6]
    assert texts[7].strip() == (
        "UsageError: 'sometimes' is not on, off or status. "
        "Usage: %checkpoint [on [--max-size SIZE] [--max-total SIZE] | off | status]"
    )
    assert "UsageError" in texts[8] and "Traceback" not in "".join(texts)
    # a reopened notebook (a new kernel on the same session file) keeps the switch
    reopened = execute(
        [
            "%load_ext pi_notebook",
            "%checkpoint status",
            "%checkpoint on",
            "%unload_ext pi_notebook",
            "%checkpoint",
        ],
        tmp_path,
        env=ENV,
        name="again.ipynb",
        allow_errors=True,
    )
    again = [outputs_text(cell) for cell in reopened.cells]
    assert "Checkpoints: off" in again[1]
    assert "checkpoints: on" in again[2]
    assert "Line magic function `%checkpoint` not found" in again[4]


CAPS = """\
agent = pi_notebook.current()
await agent.checkpoints.settled()
store = agent.checkpoints.store
kept = store.manifests()
print(json.dumps({"seqs": [m.seq for m in kept], "total": store.total_size(),
                  "last_values": sorted(kept[-1].values),
                  "last_skipped": {n: s.reason for n, s in kept[-1].skipped.items()}}))
"""

DAMAGE = """\
from pi_notebook.notebook.checkpoints import CheckpointError
manifest = agent.checkpoints.checkpoint_for(agent.session.leaf_id)
blob = store.object_path(manifest.values["chunk"].hash)
blob.write_bytes(blob.read_bytes()[:-100])
before = dict(chunk=chunk)
try:
    agent.checkpoints.load(manifest)
except CheckpointError as exc:
    print("refused:", exc)
print("unchanged:", chunk is before["chunk"])
"""


def test_caps_prune_the_oldest_and_a_damaged_checkpoint_is_refused(tmp_path: Path) -> None:
    chunk = "chunk = os.urandom({size})"
    texts = run(
        tmp_path,
        [
            "%checkpoint on --max-size 1MB --max-total 1.5MB",
            "%checkpoint on --max-size lots",
            "%checkpoint on --max-total",
            "big = os.urandom(2 * 1024 * 1024)\n"
            f"server.add(call(1, {chunk.format(size=600_000)!r}),"
            f" call(2, {chunk.format(size=600_001)!r}), call(3, {chunk.format(size=600_002)!r}),"
            " answer('done'))\n"
            "await pi_notebook.current().ensure_harness(model)",
            "%%agent --wait\nMake chunks.",
            CAPS,
            DAMAGE,
            "%checkpoint status",
        ],
        allow_errors=True,
    )
    assert (
        "checkpoints: on (test.pi.ckpt/ beside the session file; caps 1.0 MB each, 1.5 MB"
        in (texts[2])
    )
    assert "UsageError: 'lots' is not a size (such as 500MB or 2GB)" in texts[3]
    assert "UsageError: --max-total needs a size" in texts[4]
    report = json.loads(texts[7])
    # four checkpoints were taken (the run's start, three cells); each new 600 KB chunk pushed
    # the total over 1.5 MB, so only the newest two are left
    assert report["seqs"] == [3, 4]
    assert report["total"] <= 1.5 * 2**20
    assert "chunk" in report["last_values"] and "big" not in report["last_values"]
    assert report["last_skipped"]["big"].startswith("over the checkpoint's size cap (1.0 MB")
    damage = texts[8]
    assert "refused: the stored value of 'chunk' is damaged" in damage
    assert "unchanged: True" in damage
    status = texts[9]
    assert "2 checkpoints" in status and "cap 1.0 MB each, 1.5 MB in all" in status
    assert "skipped big (bytes): over the checkpoint's size cap (1.0 MB" in status
