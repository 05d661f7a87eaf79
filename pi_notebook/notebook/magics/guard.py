"""Guardrails: ``%budget`` (spending caps), ``%verify`` (does the notebook run top-down?) and
``%export`` (the session as one file to share).

    %budget                                       the caps and what was spent
    %budget [--run] --max-cost USD --max-tokens N --max-turns N
                                                  set caps (the session's; --run: every run's)
    %budget clear [--run]                         remove them
    %verify [--timeout SECONDS]                   run a copy top-down in a fresh kernel
    %export PATH.html|PATH.md [--tree]            the current branch (--tree: all) as one file

A cap given as ``none`` removes that one cap. ``%%agent --max-cost …`` caps one run over the
run defaults. The caps live in the session file, so a reopened notebook keeps them.
"""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .base import AgentMagics

if TYPE_CHECKING:
    from ...harness import BudgetSettings

__all__ = ["GuardMagics", "budget_lines", "cap_value"]

_NONE = "none"


def cap_value(kind: type[float] | type[int]) -> Callable[[str], float | int | str]:
    """An argparse type for a cap: a positive number of ``kind``, or ``none`` (no cap)."""

    def parse(text: str) -> float | int | str:
        if text.strip().lower() == _NONE:
            return _NONE
        try:
            value = kind(text.strip().lstrip("$"))
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (or none)") from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: a cap must be more than 0")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def budget_lines(settings: BudgetSettings) -> str:
    """The caps in two lines (``%session``, ``%budget``)."""
    return (
        f"session caps: {settings.session.describe()}\n"
        f"run caps (every %%agent): {settings.run.describe()}"
    )


@magics_class
class GuardMagics(AgentMagics):
    """``%budget``, ``%verify``, ``%export``."""

    @magic_arguments()
    @argument("action", nargs="?", default="show", choices=("show", "clear"))
    @argument("--run", action="store_true", help="The default caps of every run.")
    @argument("--max-cost", metavar="USD", type=cap_value(float), help="Dollars, or none.")
    @argument("--max-tokens", metavar="N", type=cap_value(int), help="Tokens, or none.")
    @argument("--max-turns", metavar="N", type=cap_value(int), help="Model requests, or none.")
    @no_var_expand
    @line_magic
    def budget(self, line: str) -> None:
        """Show or set spending caps. The session's caps count everything the session spent;
        --run sets the caps every %%agent run gets (its own --max-cost … flags override them).
        A run that would pass a cap stops before the model request, keeping what it did."""
        try:
            args = parse_argstring(self.budget, line)
        except UsageError:
            raise
        except (ValueError, SystemExit) as exc:  # shlex errors, argparse exits
            raise UsageError(f"{exc}. See %budget? for the usage.") from None
        from ...harness.budget import BudgetCaps, BudgetSettings

        current = self.pi.budget
        given = {
            name: getattr(args, name)
            for name in ("max_cost", "max_tokens", "max_turns")
            if getattr(args, name) is not None
        }
        if args.action == "clear":
            if given:
                raise UsageError("%budget clear takes no caps (use --max-cost none …)")
            caps = BudgetCaps()
        elif given:
            old = current.run if args.run else current.session
            values = {
                "max_cost": old.max_cost,
                "max_tokens": old.max_tokens,
                "max_turns": old.max_turns,
            }
            values.update({k: (None if v == _NONE else v) for k, v in given.items()})
            caps = BudgetCaps(**values)  # type: ignore[arg-type]  # checked by cap_value
        else:
            self._show(current)
            return
        if args.run:
            settings = BudgetSettings(session=current.session, run=caps)
        else:
            settings = BudgetSettings(session=caps, run=current.run)
        self.pi.set_budget(settings)
        print(budget_lines(settings))

    def _show(self, settings: BudgetSettings) -> None:
        totals = self.pi.session.usage_totals()
        print(
            f"{budget_lines(settings)}\n"
            f"session spent: ${totals.cost:.4f}, {totals.total_tokens:,} tokens"
        )

    @no_var_expand
    @line_magic
    def export(self, line: str) -> None:
        """%export PATH.html|PATH.md [--tree]: write the session's current branch (--tree:
        every branch) to one standalone file to share: messages, tool calls and results,
        images, usage and cost, labels. API keys and other credentials of the environment,
        and URL passwords, are blanked out."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{exc}. Usage: %export PATH.html|PATH.md [--tree]") from None
        tree = "--tree" in words
        paths = [word for word in words if word != "--tree"]
        if len(paths) != 1 or paths[0].startswith("-"):
            raise UsageError("Usage: %export PATH.html|PATH.md [--tree]")
        target = Path(paths[0]).expanduser()
        if target.suffix.lower() not in (".html", ".htm", ".md", ".markdown"):
            raise UsageError(f"%export writes .html or .md files, not {target.name!r}")
        from ...harness.export import environment_redactor, export_session

        harness = self.pi.harness_if_made
        headers = harness.model.headers if harness is not None else None
        try:
            written = export_session(
                self.pi.session,
                target,
                tree=tree,
                redactor=environment_redactor(headers=headers),
            )
        except OSError as exc:
            raise UsageError(f"Cannot write {target}: {exc.strerror or exc}") from None
        what = "every branch" if tree else "the current branch"
        print(f"Exported {what} of the session to {written}")

    @magic_arguments()
    @argument(
        "--timeout",
        type=int,
        default=None,
        metavar="SECONDS",
        help="The time limit of each cell (default 120).",
    )
    @no_var_expand
    @line_magic
    def verify(self, line: str) -> None:
        """Run a copy of this notebook top-down in a fresh kernel (headless, in a temporary
        copy of its folder, without API keys) and report the cells that fail, the cells that
        only worked because of the order they ran in, and outputs that differ from the
        document's. %%agent cells are not run (they would ask the model). The open notebook is
        read from JupyterLab when linked, else from its file. The kernel stays responsive."""
        try:
            args = parse_argstring(self.verify, line)
        except (ValueError, SystemExit) as exc:
            raise UsageError(f"{exc}. See %verify? for the usage.") from None
        if args.timeout is not None and args.timeout <= 0:
            raise UsageError("--timeout must be a positive number of seconds")
        from ..verify import DEFAULT_CELL_TIMEOUT, verify_open_notebook

        timeout = args.timeout or DEFAULT_CELL_TIMEOUT

        async def run() -> str:
            report = await verify_open_notebook(self.pi.document, self.pi.history, timeout=timeout)
            return report.text()

        self.outcomes.report("%verify", run)
