"""pi 1.6 session files, both ways, against the real pi 1.6.0 (tests/golden/pi-1.6/sessions).

pi → us: files pi 1.6 wrote open here with pi's own reading of them (the leaf, the context at
the leaf and at every other branch end, the replayed system prompt and tools, the usage totals)
and are written back byte for byte. us → pi: the files pi_notebook writes (regenerated here and
compared with the committed ones) read in pi 1.6 as they read here. The ``pi_node`` test runs pi
itself on freshly written files (skipped unless the generator's node_modules are installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.harness import LeafEntry, Session, SessionFileWarning, estimate_tokens
from pi_notebook.harness.jsonl import encode_record
from tests.harness import pi16_scenarios
from tests.paths import GOLDEN

PI16 = GOLDEN / "pi-1.6" / "sessions"
PI_FILES = sorted((PI16 / "pi").glob("*.jsonl"))
OUR_FILES = sorted((PI16 / "ours").glob("*.jsonl"))
NODE = PI16 / "node_modules" / ".bin" / "node"


def _reading(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".pi.json").read_text(encoding="utf-8"))
    return data


def _messages(session: Session) -> list[dict[str, Any]]:
    return [m.to_json_dict() for m in session.build_context().messages]


def _numbers_as_pi(value: Any) -> Any:
    """JSON data with floats that are whole numbers written as ints (as JavaScript does)."""
    if isinstance(value, dict):
        return {k: _numbers_as_pi(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_pi(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _check_reading(session: Session, pi: dict[str, Any], tmp_path: Path) -> None:
    context = session.build_context()
    assert _numbers_as_pi(_messages(session)) == pi["context"]["messages"]
    assert context.thinking_level == pi["context"]["thinkingLevel"]
    model = pi["context"]["model"]
    assert (context.model.to_json_dict() if context.model else None) == model
    assert (context.system_prompt or "") == pi["systemPrompt"]
    assert (context.tool_names or []) == pi["toolNames"]
    assert [estimate_tokens(m) for m in context.messages] == pi["estimates"]  # pi's chars/4
    totals = session.usage_totals()
    tokens = pi["stats"]["tokens"]
    assert (totals.input, totals.output, totals.cache_read, totals.cache_write) == (
        tokens["input"],
        tokens["output"],
        tokens["cacheRead"],
        tokens["cacheWrite"],
    )
    assert totals.total_tokens == tokens["total"]
    assert totals.cost == pytest.approx(pi["stats"]["cost"])
    # every other branch end: a copy of the file, with the leaf moved there
    assert session.path is not None
    copy = tmp_path / f"branch-{session.path.name}"
    shutil.copy(session.path, copy)
    other = Session.open(copy)
    for leaf_id, messages in pi["branches"].items():
        entry = other.get_entry(leaf_id)
        target = entry.target_id if isinstance(entry, LeafEntry) else leaf_id
        other.set_leaf(target)
        assert _numbers_as_pi(_messages(other)) == messages, leaf_id


@pytest.mark.parametrize("path", PI_FILES, ids=lambda p: p.stem)
def test_files_pi_wrote_give_pis_context(path: Path, tmp_path: Path) -> None:
    session = Session.open(path)
    pi = _reading(path)
    assert session.leaf_id == pi["leafId"]
    _check_reading(session, pi, tmp_path)


@pytest.mark.parametrize("path", PI_FILES, ids=lambda p: p.stem)
def test_files_pi_wrote_round_trip_with_every_field(path: Path) -> None:
    """Unknown entry types and fields included. (Key order follows our declarations: pi keeps
    whatever order its producer used, so bytes can differ where the producer's order does.)"""
    lines = path.read_bytes().splitlines(keepends=True)
    session = Session.open(path)
    ours = [encode_record(session.header), *map(encode_record, session.get_entries())]
    assert [json.loads(line) for line in ours] == [json.loads(line) for line in lines]


def test_pi_files_cover_every_1_6_kind() -> None:
    kinds: set[str] = set()
    for path in PI_FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            kinds.add(record["type"])
            if record["type"] == "message":
                kinds.add("role:" + record["message"]["role"])
                kinds.add("stop:" + record["message"].get("stopReason", ""))
            if record.get("type") == "compaction":
                kinds.add("compaction:retain-none" * (record["firstKeptEntryId"] == record["id"]))
                kinds.add("compaction:systemMessage" * ("systemMessage" in record))
            if record.get("type") == "context_edit":
                kinds.add(f"edit:{'null' if record['replacement'] is None else 'replace'}")
    assert {
        "usage",
        "context_edit",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "model_change",
        "thinking_level_change",
        "future_entry_kind",
        "role:system",
        "role:toolResult",
        "stop:deferred",
        "stop:error",
        "compaction:retain-none",
        "compaction:systemMessage",
        "edit:null",
        "edit:replace",
    } <= kinds


# --- us → pi -------------------------------------------------------------------------------------


def test_our_files_are_regenerated_exactly(tmp_path: Path) -> None:
    written = pi16_scenarios.write_all(tmp_path)
    assert [p.name for p in written] == [p.name for p in OUR_FILES]
    for fresh in written:
        assert fresh.read_bytes() == (PI16 / "ours" / fresh.name).read_bytes(), fresh.name


@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_pi_reads_our_files_as_we_do(path: Path, tmp_path: Path) -> None:
    session = Session.open(path)
    pi = _reading(path)
    leaf = session.get_entry(pi["leafId"]) if pi["leafId"] else None
    # pi's leaf is the last line; after a leaf move that is the move itself, parented at the
    # target, so pi's branch is ours
    assert pi["leafId"] == session.leaf_id or (
        isinstance(leaf, LeafEntry) and leaf.target_id == session.leaf_id
    )
    _check_reading(session, pi, tmp_path)


@pytest.mark.pi_node
def test_pi_itself_reads_freshly_written_files(tmp_path: Path) -> None:
    if not NODE.exists():
        pytest.skip("pi 1.6 is not installed (npm ci in tests/golden/pi-1.6/sessions)")
    pi16_scenarios.write_all(tmp_path)
    subprocess.run(
        [str(NODE), str(PI16 / "generate.mjs"), "read", str(tmp_path)],
        check=True,
        cwd=PI16,
        capture_output=True,
        timeout=300,
    )
    for path in sorted(tmp_path.glob("*.jsonl")):
        session = Session.open(path)
        fresh = _reading(path)
        committed = _reading(PI16 / "ours" / path.name)
        assert fresh == committed, path.name
        _check_reading(session, fresh, tmp_path)


@pytest.mark.pi_node
def test_a_torn_last_line_reads_the_same_in_pi_and_here(tmp_path: Path) -> None:
    if not NODE.exists():
        pytest.skip("pi 1.6 is not installed (npm ci in tests/golden/pi-1.6/sessions)")
    path = tmp_path / "torn.jsonl"
    source = PI16 / "ours" / "branches-and-retain-none.jsonl"
    path.write_bytes(source.read_bytes() + source.read_bytes().splitlines()[-1][:40])
    subprocess.run(  # pi reads first: it terminates the torn line and skips it
        [str(NODE), str(PI16 / "generate.mjs"), "read", str(tmp_path)],
        check=True,
        cwd=PI16,
        capture_output=True,
        timeout=300,
    )
    assert path.read_bytes().endswith(b"\n")
    with pytest.warns(SessionFileWarning, match="torn"):
        session = Session.open(path)  # we drop the line pi terminated
    assert path.read_bytes() == source.read_bytes()
    assert _reading(path) == _reading(source)
    _check_reading(session, _reading(path), tmp_path)
