"""``%tools`` (list the tools, offer notebook functions or built-ins, withdraw them) and
``%approve`` (the approval policy: allow, ask or deny, per tool or for all)."""

from __future__ import annotations

import re

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..approval_policy import DECISIONS
from .base import AgentMagics, parse_args, reason_of

__all__ = ["ToolMagics", "first_sentence"]


def first_sentence(text: str) -> str:
    """A tool description's first sentence, its wrapped lines joined (a listing line)."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    found = re.match(r"(.+?[.!?])(?=\s+[A-Z]|$)", paragraph)
    return found.group(1) if found else paragraph


@magics_class
class ToolMagics(AgentMagics):
    """%tools, %approve."""

    @magic_arguments()
    @argument("action", nargs="?", default="list", choices=("list", "add", "remove"))
    @argument("names", nargs="*", help="Tool or function names.")
    @line_magic
    def tools(self, line: str) -> None:
        """List the tools, add notebook functions or built-ins, or remove them. Behind a run
        still streaming, adding and removing apply when the cells above are done."""
        args = parse_args(self.tools, line)
        if args.action == "list":
            if args.names:
                raise UsageError("Usage: %tools list")
            offered = {t.name for t in self.pi.tool_offer.offered_tools()}
            held_back = self.pi.tool_offer.held_back_tools()
            for name, kind, active, description in self.pi.tool_offer.tool_listing():
                mark = "on " if name in offered else "off"
                why = ""
                if active and name not in offered:
                    reason = held_back.get(name, "no notebook frontend is connected")
                    why = f" (not offered: {reason}; %tools add {name} offers it anyway)"
                print(f"[{mark}] {name} ({kind}) {first_sentence(description)}{why}")
            return
        if not args.names:
            raise UsageError(f"Usage: %tools {args.action} NAME [NAME ...]")
        names: list[str] = list(args.names)
        if args.action == "add":
            for name in names:  # a typo is refused now, also behind a streaming run
                self._check_addable(name)

        def change() -> str:
            done: list[str] = []
            if args.action == "add":
                for name in names:
                    self._check_addable(name)  # still there when its turn came
                for name in names:
                    try:
                        done.append(self.pi.tool_offer.add_tool_by_name(name))
                    except (KeyError, TypeError, ValueError) as exc:
                        raise UsageError(reason_of(exc)) from None
                return "\n".join(done)
            active = {row[0] for row in self.pi.tool_offer.tool_listing() if row[2]}
            for name in names:
                if name not in active:
                    raise UsageError(f"No active tool named {name!r} (see %tools list)")
            for name in names:
                self.pi.tool_offer.remove_tool(name)
                done.append(f"Removed the tool {name}")
            return "\n".join(done)

        self.outcomes.now_or_queued("%tools", change)

    @magic_arguments()
    @argument("target", nargs="?", help="A tool name, or 'all'.")
    @argument("decision", nargs="?", choices=DECISIONS, help="allow, ask or deny.")
    @line_magic
    def approve(self, line: str) -> None:
        """Show the approval policy, or set it for one tool or all: allow (run without asking),
        ask (Allow / Deny in the run view; the default) or deny (refused; the model is told).
        Recorded in the session. PI_NOTEBOOK_APPROVE (e.g. run_python=allow) sets it from the
        kernel's environment, for notebooks executed without anyone to click."""
        args = parse_args(self.approve, line)
        if args.target is None:
            print(self.pi.approval_policy.describe())
            return
        if args.decision is None:
            raise UsageError("Usage: %approve [TOOL|all allow|ask|deny]")
        if args.target != "all":
            known = {row[0] for row in self.pi.tool_offer.tool_listing()}
            if args.target not in known:
                raise UsageError(f"No tool named {args.target!r} (see %tools list)")
        self.pi.set_approval(args.target, args.decision)
        scope = "every tool" if args.target == "all" else args.target
        print(f"approval policy: {scope}: {args.decision}")

    def _check_addable(self, name: str) -> None:
        """Refuse a name ``%tools add`` cannot find (what ``add_tool_by_name`` would say)."""
        from ...agent.tools import AgentTool

        if self.pi.mcp.is_tool(name) or self.pi.tools.is_builtin(name):
            return
        value = self.pi.namespace.get(name)
        if value is None:
            raise UsageError(f"No function or built-in tool named {name!r}")
        if not (callable(value) or isinstance(value, AgentTool)):
            raise UsageError(f"{name!r} is a {type(value).__name__}, not a function")
