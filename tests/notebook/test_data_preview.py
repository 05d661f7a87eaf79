"""``DataPreview``: the text data files a prompt names are shown to the model once, header and
first rows as on disk; missing, binary and unreadable files are passed over."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_notebook.harness import Session
from pi_notebook.notebook.data_preview import (
    CUSTOM_TYPE,
    DataPreview,
    named_data_files,
    preview_text,
)

from .kernel_notebook import execute, outputs_text


def previews(session: Session) -> list[str]:
    texts = []
    for entry in session.entries_of("custom_message"):
        assert getattr(entry, "custom_type", None) == CUSTOM_TYPE
        texts.append(str(entry.content))  # type: ignore[attr-defined]
    return texts


def test_the_files_named_are_those_that_exist_in_the_order_named(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.csv").write_text("x\n")
    (tmp_path / "a.tsv").write_text("y\n")
    prompt = "Join data/b.csv with a.tsv (not c.csv), then data/b.csv again; see notes.md"
    assert named_data_files(prompt, tmp_path) == [tmp_path / "data/b.csv", tmp_path / "a.tsv"]


def test_a_long_file_shows_its_header_and_three_rows(tmp_path: Path) -> None:
    path = tmp_path / "cars.csv"
    path.write_text("Name,Origin\n" + "".join(f"car {i},USA\n" for i in range(50)))
    text = preview_text([path], tmp_path)
    assert text is not None
    assert "cars.csv (its first lines; more follow):\n```\nName,Origin\ncar 0,USA\n" in text
    assert "car 2,USA\n```" in text and "car 3" not in text


def test_a_short_file_is_shown_whole_and_long_lines_are_cut(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"column_{i}" for i in range(200)) + "\r\n1,2\r\n")
    text = preview_text([path], tmp_path)
    assert text is not None
    header = text.split("```\n")[1].splitlines()[0]
    assert header.startswith("column_0,column_1,") and header.endswith(" …")
    assert len(header) == 402 and "(the whole file)" in text and "\r" not in text


def test_binary_empty_and_undecodable_files(tmp_path: Path) -> None:
    (tmp_path / "t.parquet").write_bytes(b"PAR1\0\0")
    (tmp_path / "nul.csv").write_bytes(b"a,b\n\0\0\n")
    (tmp_path / "empty.csv").write_text("")
    assert preview_text([tmp_path / n for n in ("t.parquet", "nul.csv", "empty.csv")]) is None
    (tmp_path / "latin.csv").write_bytes("name\ncaf\xe9\n".encode("latin-1"))
    text = preview_text([tmp_path / "latin.csv"], tmp_path)
    assert text is not None and "caf\ufffd" in text


def test_credentials_never_reach_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    (tmp_path / "api_keys.csv").write_text("name,key\nme,abc\n")
    (tmp_path / "secrets.json").write_text('{"a": 1}\n')
    (tmp_path / "runs.csv").write_text("run,key\n1,sk-test-0123456789abcdef\n")
    named = named_data_files("see api_keys.csv, secrets.json and runs.csv", tmp_path)
    text = preview_text(named, tmp_path)
    assert text is not None and "api_keys" not in text and "secrets" not in text
    assert "runs.csv" in text and "sk-test" not in text and "1,***" in text


async def test_a_file_is_shown_once_until_it_changes(tmp_path: Path) -> None:
    session, preview = Session.create(tmp_path / "s.pi.jsonl"), DataPreview()
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    assert await preview.append(session, "How many rows in t.csv?", tmp_path)
    assert not await preview.append(session, "And the mean of a in t.csv?", tmp_path)
    assert not await preview.append(session, "Hello there", tmp_path)
    path.write_text("a\n1\n2\n")
    os.utime(path, ns=(0, 10**18))  # a later modification time even on a coarse clock
    assert await preview.append(session, "Count the rows of t.csv again", tmp_path)
    first, second = previews(session)
    assert "a\n1\n```" in first and "a\n1\n2\n```" in second


PREVIEW_SCRIPT = """
from pi_notebook.ai import faux_assistant_message, register_faux_provider
faux = register_faux_provider(tokens_per_second=1000)
faux.set_responses([faux_assistant_message("I cannot open files."), faux_assistant_message("ok")])
%model faux/faux-1 --tools no
"""

PREVIEW_REPORT = """
import json, pi_notebook
pi = pi_notebook.current()
print(json.dumps([e.custom_type for e in pi.session.entries_of("custom_message")]))
"""


def test_only_a_model_that_calls_tools_is_shown_the_data(tmp_path: Path) -> None:
    # a real kernel: an answers-only model would only answer from the first rows
    (tmp_path / "t.csv").write_text("a\n1\n")
    ask = "%%agent --wait\nHow many rows does t.csv have?"
    cells = ["%load_ext pi_notebook", PREVIEW_SCRIPT, ask, PREVIEW_REPORT]
    cells += ["%model --tools yes", ask, PREVIEW_REPORT]
    nb = execute(cells, tmp_path, env={"PI_NOTEBOOK_CONTEXT": "off"})
    assert json.loads(outputs_text(nb.cells[3])) == []
    assert json.loads(outputs_text(nb.cells[6])) == [CUSTOM_TYPE]
