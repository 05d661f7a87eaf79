"""pi's instruction files, found and rendered as pi-coding-agent 1.6 does.

- Context files: in each directory one of ``AGENTS.override.md``, ``AGENTS.md``, ``AGENTS.MD``,
  ``CLAUDE.md``, ``CLAUDE.MD`` (the first that exists); the agent dir's (``~/.pi/agent``, or
  ``PI_CODING_AGENT_DIR``) first, then those of the working directory and its parents, outermost
  first, each file once.
- ``SYSTEM.md`` replaces the default prompt and ``APPEND_SYSTEM.md`` is added after it: the
  project's (``.pi/`` in the working directory) before the agent dir's.

pi keeps the prompt as named sections of system messages in the transcript: ``preamble`` (the
base prompt, as is), then ``addendum`` and ``project_context``, each wrapped in a tag of its
name. :func:`instruction_sections` builds those, :func:`sections_patch` the change to write.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "CONTEXT_FILE_NAMES",
    "ContextFile",
    "agent_dir",
    "instruction_sections",
    "load_context_files",
    "section_body",
    "sections_patch",
    "system_prompt_files",
]

CONTEXT_FILE_NAMES: Final = (
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
)
PROJECT_DIR: Final = ".pi"
INSTRUCTION_SECTIONS: Final = ("preamble", "addendum", "project_context")


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str


def agent_dir() -> Path:
    """pi's agent dir: ``PI_CODING_AGENT_DIR``, else ``~/.pi/agent``."""
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".pi" / "agent"


def _read(path: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        return path.read_text(encoding="utf-8-sig")  # pi strips a byte-order mark
    except (OSError, UnicodeDecodeError):
        return None  # pi warns and goes on without the file


def _context_file_in(directory: Path) -> ContextFile | None:
    for name in CONTEXT_FILE_NAMES:
        path = directory / name
        content = _read(path)
        if content is not None:
            return ContextFile(str(path), content)
    return None


def load_context_files(cwd: str | Path, agents: str | Path | None = None) -> list[ContextFile]:
    """The context files for ``cwd``, in the order pi puts them in the prompt."""
    found: list[ContextFile] = []
    seen: set[str] = set()
    global_file = _context_file_in(Path(agents) if agents is not None else agent_dir())
    if global_file is not None:
        found.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    directory = Path(cwd).resolve()
    while True:
        file = _context_file_in(directory)
        if file is not None and file.path not in seen:
            ancestors.insert(0, file)
            seen.add(file.path)
        if directory.parent == directory:
            break
        directory = directory.parent
    return [*found, *ancestors]


def system_prompt_files(
    cwd: str | Path, agents: str | Path | None = None
) -> tuple[str | None, str | None]:
    """(``SYSTEM.md``, ``APPEND_SYSTEM.md``) texts: the project's, else the agent dir's."""
    base = Path(agents) if agents is not None else agent_dir()
    project = Path(cwd) / PROJECT_DIR

    def first(name: str) -> str | None:
        for path in (project / name, base / name):
            text = _read(path)
            if text is not None:
                return text
        return None

    return first("SYSTEM.md"), first("APPEND_SYSTEM.md")


def _wrap(name: str, body: str) -> str:
    return f"<{name}>\n{body}\n</{name}>"


def section_body(name: str, value: str | None) -> str | None:
    """A section's text without the tag pi wraps it in (the preamble has none)."""
    if value is None or name == "preamble":
        return value
    head, tail = f"<{name}>\n", f"\n</{name}>"
    if value.startswith(head) and value.endswith(tail):
        return value[len(head) : -len(tail)]
    return value


def instruction_sections(
    preamble: str, addendum: str | None, context_files: Sequence[ContextFile]
) -> dict[str, str]:
    """The sections pi renders for a base prompt, an appended text and context files."""
    sections = {"preamble": preamble}
    if addendum:
        sections["addendum"] = _wrap("addendum", addendum)
    if context_files:
        files = [
            f'<project_instructions path="{file.path}">\n{file.content}\n</project_instructions>'
            for file in context_files
        ]
        body = "\n\n".join(["Project-specific instructions and guidelines:", *files])
        sections["project_context"] = _wrap("project_context", body)
    return sections


def sections_patch(
    current: Mapping[str, str], desired: Mapping[str, str]
) -> dict[str, str | None] | None:
    """The ``SystemMessage.sections`` patch from ``current`` to ``desired`` for the instruction
    sections (others are left alone); None when nothing changes."""
    patch: dict[str, str | None] = {}
    for name in INSTRUCTION_SECTIONS:
        want = desired.get(name)
        if current.get(name) != want:
            patch[name] = want
    patch = {name: value for name, value in patch.items() if value is not None or name in current}
    return patch or None
