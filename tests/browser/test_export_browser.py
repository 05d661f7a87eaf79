"""``%export`` end to end: a real kernel (nbclient) runs two branches of a conversation with the
faux provider — a tool whose result carries an API key, a URL password and a plot-like image,
a prompt that tries HTML injection, a label — and exports them as HTML (the current branch)
and Markdown (the whole tree). The HTML is opened in Debian's Chromium and checked: what it
shows, the image decoded from its data URI, no script run, and the secret nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.notebook.kernel_notebook import FAUX_SETUP, execute, outputs_text

from .lab import ARTIFACTS

SECRET = "sk-exporttest-0123456789abcdefSECRET"
PASSWORD = "hunter2hunter2"

TOOL = f"""\
import io, os, pi_notebook
from PIL import Image, ImageDraw

@pi_notebook.tool
def fetch_report() -> str:
    "Fetch the report."
    return ("key in use: " + os.environ["OPENAI_API_KEY"]
            + " from https://admin:{PASSWORD}@db.example.com/report")

@pi_notebook.tool
def chart():
    "Draw the chart."
    image = Image.new("RGB", (120, 60), "white")
    ImageDraw.Draw(image).rectangle([10, 20, 110, 50], fill="steelblue")
    return image

calls = [faux_tool_call("fetch_report", {{}}), faux_tool_call("chart", {{}})]
faux.set_responses([
    faux_assistant_message(calls, stop_reason="toolUse"),
    faux_assistant_message(
        "The report:\\n\\n| metric | value |\\n|---|---|\\n| rows | 42 |\\n\\n"
        "<script>window.__pwned = 1</script> [click](javascript:window.__pwned=2)"
    ),
    faux_assistant_message("A different answer on another branch."),
])
"""


def test_export_html_and_markdown_open_clean_in_chromium(tmp_path: Path, browser: Any) -> None:
    nb = execute(
        [
            FAUX_SETUP.format(tps=None),
            "%load_ext pi_notebook\n%model faux/faux-1",
            TOOL,
            '%%agent --wait\nFetch the report <img src=x onerror="window.__pwned=3">',
            "%label report",
            "%fork -1",
            "%%agent --wait\nAnswer differently.",
            "%fork report",
            "%export shared.html\n%export shared.md --tree",
            "%export shared.txt",
        ],
        tmp_path,
        env={
            "JPY_SESSION_NAME": "test.ipynb",
            "PI_NOTEBOOK_CONTEXT": "off",
            "OPENAI_API_KEY": SECRET,
        },
        allow_errors=True,
    )
    assert "Exported the current branch of the session to shared.html" in outputs_text(nb.cells[8])
    assert "every branch of the session to shared.md" in outputs_text(nb.cells[8])
    assert "UsageError" in outputs_text(nb.cells[9])
    assert "writes .html or .md files" in outputs_text(nb.cells[9])
    html_file, md_file = tmp_path / "shared.html", tmp_path / "shared.md"
    for written in (html_file, md_file):
        text = written.read_text(encoding="utf-8")
        assert SECRET not in text and PASSWORD not in text
        assert "***" in text
    md = md_file.read_text(encoding="utf-8")
    assert "A different answer on another branch." in md  # --tree has both branches
    assert "branch 2 of 2" in md
    assert "![image](data:image/png;base64," in md

    page = browser.new_page(viewport={"width": 1000, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(html_file.as_uri())
        body = page.inner_text("body")
        assert "Fetch the report" in body
        assert 'onerror="window.__pwned=3"' in body  # shown as text, not run
        assert "<script>window.__pwned = 1</script>" in body
        assert "A different answer" not in body  # the current branch only
        assert SECRET not in page.content() and PASSWORD not in page.content()
        assert "https://***@db.example.com/report" in body
        assert page.locator("table td", has_text="42").count() == 1  # Markdown rendered
        assert page.locator(".label", has_text="report").count() == 1
        assert page.locator("article.assistant").count() == 2
        assert page.locator(".call-name", has_text="call fetch_report").count() == 1
        assert "$0.0000" in body and "faux/faux-1" in body
        image = page.locator("img.inline")
        assert image.count() == 1
        assert image.evaluate("(img) => img.complete && img.naturalWidth") == 120
        assert page.locator("a[href^='javascript']").count() == 0
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator("script").count() == 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "export_html.png"), full_page=True)
    finally:
        page.close()
    assert errors == []
