"""``export_session`` without a kernel: escaping, redaction, branch and tree, Markdown fences,
images and file types (the browser check is tests/browser/test_export_browser.py)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.ai.redaction import Redactor
from pi_notebook.harness import InMemorySessionStorage, Session, export_session, render_session
from pi_notebook.harness.export import environment_redactor

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
    )
).decode()


def conversation() -> Session:
    s = Session.create(InMemorySessionStorage())
    s.append_message(
        UserMessage(
            content=[
                TextContent(text="look <img src=x onerror=alert(1)> token=tok_abcdef123456"),
                ImageContent(data=PNG, mime_type="image/png"),
                ImageContent(data='AAAA" onload="alert(1)', mime_type="image/png"),
            ]
        )
    )
    reply = s.append_message(
        AssistantMessage(
            content=[
                TextContent(text="```py\nx = 1\n```\nand `ghp_" + "a" * 36 + "`"),
                ToolCall(id="c1", name="run", arguments={"code": "print('```')"}),
            ],
            api="x",
            provider="p",
            model="m",
            usage=Usage(input=1000, output=50),
            stop_reason="toolUse",
        )
    )
    s.append_message(
        ToolResultMessage(
            tool_call_id="c1", tool_name="run", content=[TextContent(text="```")], is_error=False
        )
    )
    s.append_label(reply.id, "checked")
    s.set_leaf(reply.id)
    s.append_message(
        ToolResultMessage(
            tool_call_id="c1", tool_name="run", content=[TextContent(text="sibling")], is_error=True
        )
    )
    return s


def test_html_escapes_and_redacts() -> None:
    page = render_session(conversation(), "html", redactor=Redactor(["tok_abcdef123456"]))
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "tok_abcdef123456" not in page and "ghp_aaaa" not in page
    assert page.count('<img class="inline"') == 1  # the malformed image is left out
    assert "onload" not in page
    assert "sibling" in page and "checked" in page
    assert "Content-Security-Policy" in page and "<script" not in page


def test_branch_and_tree() -> None:
    session = conversation()
    branch = render_session(session, "md", redactor=Redactor())
    tree = render_session(session, "md", tree=True, redactor=Redactor())
    assert "sibling" in branch and "branch 1 of 2" not in branch
    assert "branch 1 of 2" in tree and "branch 2 of 2 (current)" in tree
    assert "````" in tree  # a fence longer than the backticks inside


def test_environment_redactor_takes_credential_variables() -> None:
    redactor = environment_redactor(
        {"OPENAI_API_KEY": "sk-1234567890", "MY_SERVICE_TOKEN": "abcdefgh", "HOME": "/root"},
        headers={"Authorization": "Bearer zzzzzzzz"},
    )
    text = redactor.scrub("sk-1234567890 abcdefgh /root zzzzzzzz")
    assert text == "*** *** /root ***"


def test_export_session_picks_the_format_by_suffix(tmp_path: Path) -> None:
    session = conversation()
    html_path = export_session(session, tmp_path / "a.HTML", redactor=Redactor())
    assert html_path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    md_path = export_session(session, tmp_path / "a.md", redactor=Redactor())
    assert md_path.read_text(encoding="utf-8").startswith("# pi session")
    with pytest.raises(ValueError, match=r"html or \.md"):
        export_session(session, tmp_path / "a.pdf")
