"""``%system``: show the agent's system prompt and where its parts come from, or set, append to
or reset it (kept in the session)."""

from __future__ import annotations

import os

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class

from .base import AgentMagics

__all__ = ["SystemMagics"]


@magics_class
class SystemMagics(AgentMagics):
    """%system."""

    @line_magic
    def system(self, line: str) -> None:
        """The agent's system prompt. %system shows what the next run uses and where it comes
        from; %system set TEXT replaces the base prompt, %system append TEXT adds to it,
        %system reset goes back to the default analyst prompt (or pi's SYSTEM.md /
        APPEND_SYSTEM.md). pi's context files (AGENTS.md next to the notebook, in its parents,
        in ~/.pi/agent) are added to it. Kept in the session: branches and a reopened notebook
        keep it."""
        action, _, text = line.strip().partition(" ")
        text = text.strip()
        if action == "":
            self._show_instructions()
            return
        if action not in ("set", "append", "reset"):
            raise UsageError(f"%system {action}: use set TEXT, append TEXT or reset")
        if action in ("set", "append") and not text:
            raise UsageError(f"%system {action} needs the text")
        if action == "reset" and text:
            raise UsageError("%system reset takes no text")

        async def change() -> str:
            from ...harness.context_files import section_body, system_prompt_files
            from ..instructions import current_sections

            pi = self.pi
            if action == "set":
                pi.update_instructions(preamble=text)
                return "System prompt set; the next run uses it (%system shows it)."
            if action == "append":
                current = current_sections(pi.session).get("addendum")
                earlier = section_body("addendum", current) if current else None
                joined = f"{earlier}\n\n{text}" if earlier else text
                pi.update_instructions(addendum=joined)
                return "Appended to the system prompt; the next run uses it."
            system_md, append_md = system_prompt_files(os.getcwd())
            pi.update_instructions(preamble=system_md or pi.default_prompt(), addendum=append_md)
            return "System prompt reset."

        self.outcomes.report("%system", change)

    def _show_instructions(self) -> None:
        from ..analyst_prompt import is_analyst_prompt
        from ..instructions import current_sections, desired_instructions

        current = current_sections(self.pi.session)
        wanted = desired_instructions(current, self.pi.default_prompt())
        sources = [f"context file: {file.path}" for file in wanted.context_files]
        if is_analyst_prompt(wanted.sections["preamble"]):
            sources.insert(0, "base prompt: the default, built for the tools offered")
        elif "preamble" in current:
            sources.insert(0, "base prompt: the session's (%system set)")
        elif wanted.system_file:
            sources.insert(0, "base prompt: SYSTEM.md")
        if "addendum" in current:
            sources.insert(1, "appended: the session's (%system append)")
        elif wanted.append_file:
            sources.insert(1, "appended: APPEND_SYSTEM.md")
        print(wanted.text_after(current))
        if sources:
            print("\n-- " + "\n-- ".join(sources))
