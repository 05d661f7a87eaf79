"""Navigating the session tree as pi 1.6 does, against a real pi-coding-agent 1.6.0 run
(``tests/golden/pi-1.6/sessions/navigation.mjs``): the first part of pi's file (two prompts at
thinking levels "high" then "low", pi's leading system message) is opened in our
``AgentHarness``, pi's steps are repeated, and what we append must be what pi appended:

- navigating to the first user message with a summary hangs the ``branch_summary`` under the
  leading system message (no new root), its ``fromId`` being the leaf left behind;
- a run that starts on a branch whose last ``thinking_level_change`` names another level than
  the live one first records the live level (pi's ``_recordSelection``), so the branch reopens
  at the level it runs at.

A navigation itself writes nothing, as in pi 1.6: every entry we append is one pi appended.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_notebook.ai import FauxProvider, faux_assistant_message
from pi_notebook.harness import AgentHarness, Session
from tests.paths import GOLDEN, read_jsonl

HERE = GOLDEN / "pi-1.6" / "sessions" / "navigation"
RECORD: dict[str, Any] = json.loads((HERE / "navigation.json").read_text(encoding="utf-8"))
LINES = read_jsonl(HERE / "navigation.jsonl")


def _shape(entry: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """What must agree: type, parent and (mapped) ids, levels, summaries, message roles/text."""
    shape: dict[str, Any] = {"type": entry["type"], "parentId": ids.get(entry["parentId"])}
    for key in ("thinkingLevel", "summary", "fromHook"):
        if key in entry:
            shape[key] = entry[key]
    if "fromId" in entry:
        shape["fromId"] = ids.get(entry["fromId"], entry["fromId"])
    if entry["type"] == "message":
        message = entry["message"]
        shape["role"] = message["role"]
        if message["role"] != "system":
            shape["content"] = message["content"]
    return shape


async def test_navigation_appends_what_pi_16_appends(faux: FauxProvider, tmp_path: Path) -> None:
    prefix = tmp_path / "navigation.jsonl"
    text = (HERE / "navigation.jsonl").read_text(encoding="utf-8")
    prefix.write_text("".join(text.splitlines(keepends=True)[: RECORD["prefixLines"]]))
    session = Session.open(prefix)
    before = {e.id for e in session.get_entries()}
    harness = AgentHarness(
        session, faux.get_model(), thinking_level=session.build_context().thinking_level
    )
    assert harness.thinking_level == "low"
    replies = RECORD["replies"]
    faux.set_responses(
        [
            faux_assistant_message(replies["summary"]),
            faux_assistant_message(replies["third"]),
            faux_assistant_message(replies["fourth"]),
        ]
    )
    ids = {line["id"]: line["id"] for line in LINES[1 : RECORD["prefixLines"]]}
    theirs_at = RECORD["prefixLines"]
    for step in RECORD["steps"]:
        if step["step"] == "navigate":
            result = await harness.navigate_tree(step["targetId"], summarize=step["summarize"])
            assert result.editor_text == step["editorText"]
        else:
            reply = await harness.prompt(step["text"])
            assert reply.text == step["reply"]
        ours = [e for e in session.get_entries() if e.id not in before and e.id not in ids.values()]
        theirs = LINES[theirs_at : theirs_at + len(ours)]
        theirs_at += len(ours)
        for mine, pi in zip(ours, theirs, strict=True):
            ids[pi["id"]] = mine.id
            assert _shape(mine.to_json_dict(), {v: v for v in ids.values()}) == _shape(pi, ids)
        assert session.leaf_id == ids.get(step["leafId"], step["leafId"]), step
    assert theirs_at == len(LINES)  # everything pi appended, we appended
