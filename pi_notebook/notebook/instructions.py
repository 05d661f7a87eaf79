"""The agent's instructions in a notebook: the base prompt (by default the analyst prompt,
rebuilt before every run for the tools on offer), text the user appended (``%system``)
and pi's instruction files (``AGENTS.md`` and friends next to the notebook and in its parents,
the agent dir's, ``SYSTEM.md`` / ``APPEND_SYSTEM.md``), kept in the session as pi 1.6
system-message sections so branches and a reopened notebook keep them.

A session that has none of them, in a folder without such files, gets no system message at all:
the base prompt goes to the harness as its prompt. Once a section is in the session it is the
authority: ``SYSTEM.md`` and ``APPEND_SYSTEM.md`` are read for a session's first instructions and
by ``%system reset``; the context files are read again before every run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..harness.context_files import (
    ContextFile,
    instruction_sections,
    load_context_files,
    section_body,
    sections_patch,
    system_prompt_files,
)
from .analyst_prompt import is_analyst_prompt

if TYPE_CHECKING:
    from ..harness.session import Session

__all__ = ["KEEP", "Instructions", "current_sections", "desired_instructions", "write_instructions"]

KEEP: object = object()
"""For a preamble or addendum: keep what the session has."""


@dataclass(frozen=True)
class Instructions:
    """What the next run's prompt is made of."""

    sections: dict[str, str]
    context_files: list[ContextFile]
    system_file: bool
    append_file: bool

    @property
    def only_default(self) -> bool:
        """Nothing but the default prompt: no session needs a system message for it."""
        return set(self.sections) == {"preamble"} and is_analyst_prompt(self.sections["preamble"])

    def text_after(self, current: Mapping[str, str]) -> str:
        """The prompt once ``current`` is brought to these sections, in the order a replay gives
        (a section set again keeps its place, a new one goes last)."""
        if not current and self.only_default:
            return self.sections["preamble"]  # nothing is written: the base prompt stays
        result = dict(current)
        for name, value in (sections_patch(current, self.sections) or {}).items():
            if value is None:
                result.pop(name, None)
            else:
                result[name] = value
        return "\n\n".join(value for value in result.values() if value)


def current_sections(session: Session) -> dict[str, str]:
    """The system-prompt sections replayed at the session's leaf."""
    from ..ai.system_message import current_system_message

    state = current_system_message(session.build_context().messages)
    if state is None:
        return {}
    return {name: value for name, value in (state.sections or {}).items() if value is not None}


def desired_instructions(
    current: Mapping[str, str],
    base_prompt: str,
    *,
    cwd: str | None = None,
    preamble: object = KEEP,
    addendum: object = KEEP,
) -> Instructions:
    """The sections the next run should have: ``preamble``/``addendum`` as given, else as the
    session has them, else from ``SYSTEM.md``/``APPEND_SYSTEM.md``, else ``base_prompt``. A
    session's base prompt that is a default analyst prompt becomes ``base_prompt`` (rebuilt for
    the tools of this run)."""
    where = cwd or os.getcwd()
    system_md, append_md = system_prompt_files(where)
    files = load_context_files(where)
    if isinstance(preamble, str):
        pre = preamble
    elif (kept := current.get("preamble")) is not None and is_analyst_prompt(kept):
        pre = base_prompt
    else:
        pre = kept or system_md or base_prompt
    if addendum is KEEP:
        add = section_body("addendum", current["addendum"]) if "addendum" in current else append_md
    else:
        add = addendum if isinstance(addendum, str) else None
    return Instructions(
        instruction_sections(pre, add, files), files, system_md is not None, append_md is not None
    )


def write_instructions(session: Session, current: Mapping[str, str], wanted: Instructions) -> bool:
    """Append the system message that brings ``current`` to ``wanted``; False when nothing
    changes, or when there is nothing to say (no sections yet, only the default prompt)."""
    if not current and wanted.only_default:
        return False
    patch = sections_patch(current, wanted.sections)
    if patch is None:
        return False
    session.append_system_message(sections=patch)
    return True
