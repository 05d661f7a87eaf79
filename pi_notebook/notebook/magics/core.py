"""The run magics: ``%%agent`` sends a cell to the agent, ``%fix`` asks it to fix the last
failed cell, ``%steer``, ``%follow_up`` and ``%abort`` act on the live run, ``%compact``
summarises older turns and ``%agent_context`` switches the change summary. The other families
have modules of their own (``tree``, ``session``, ``model``, ``tools``, ``system``, ``mcp``,
``guard``, ``checkpoint``). Every magic has ``magic_arguments`` help (``%fork?``); bad input is a
``UsageError`` — one line, no traceback — and changes nothing.
"""

from __future__ import annotations

import dataclasses

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ...ai.thinking_levels import THINKING_LEVELS
from ..default_model import check_model_ref, local_start_notice, will_start_local
from ..workspace.fix import fix_prompt
from .base import AgentMagics, fill_in, parse_args, reason_of
from .guard import cap_value
from .input_rewrite import EMPTY_PROMPT

__all__ = ["PiMagics"]


@magics_class
class PiMagics(AgentMagics):
    """%%agent, %fix, %agent_context, %steer, %follow_up, %abort, %compact."""

    @magic_arguments()
    @argument(
        "--wait",
        action="store_true",
        help="Wait for the run to finish before the cell ends (top-level await: the kernel "
        "stays responsive, and Run All / nbclient go on only after the run).",
    )
    @argument("--model", metavar="PROVIDER/ID", help="The model for this run (e.g. local).")
    @argument("--thinking", choices=THINKING_LEVELS, help="The thinking level for this run.")
    @argument("--max-cost", metavar="USD", type=cap_value(float), help="Cap this run's cost.")
    @argument("--max-tokens", metavar="N", type=cap_value(int), help="Cap this run's tokens.")
    @argument("--max-turns", metavar="N", type=cap_value(int), help="Cap its model requests.")
    @cell_magic
    def agent(self, line: str, cell: str) -> None:
        """Send the cell to the agent as a prompt and show the run live.

        The cell returns at once; the run goes on in the background (use --wait to wait for
        it). {name} is filled in from the notebook's variables ({{ and }} for literal braces).
        Re-running a cell starts a new sibling branch where the cell's first run started.
        Stop a run with %abort or the view's Stop button (the interrupt button only stops
        waiting).

        The other magics, each with its own help (%model? …): %model, %thinking, %tools, %mcp,
        %tree, %fork, %label, %compact, %session, %steer, %follow_up, %abort, %fix and
        %agent_context.
        """
        args = parse_args(self.agent, line)
        self._writable()
        prompt = fill_in(cell, self.pi.namespace).strip()
        if not prompt:
            raise UsageError(EMPTY_PROMPT)
        if args.model:
            try:
                check_model_ref(args.model)
            except (KeyError, ValueError) as exc:
                raise UsageError(reason_of(exc)) from None
        elif (problem := self.pi.session_model_problem()) is not None:
            raise UsageError(problem)
        self.pi.tool_offer.refresh_function_tools()
        self._announce_local_start(args.model)
        budget = {
            name: value
            for name in ("max_cost", "max_tokens", "max_turns")
            if (value := getattr(args, name)) is not None
        }
        run = self.pi.start_run(prompt, model_ref=args.model, thinking=args.thinking, budget=budget)
        run.view.show()

    def _announce_local_start(self, model_ref: str | None) -> None:
        """Say in this cell that the local model is starting (its run view shows nothing until
        llama.cpp has loaded it); a replayed cassette starts nothing."""
        cassette = self.pi.cassette
        if cassette is not None and cassette.mode == "replay":
            return
        if model_ref is None:
            try:
                if self.pi.knows_model():  # nothing to start
                    return
            except Exception:  # a bad PI_NOTEBOOK_MODEL, say: the run reports it
                return
        if will_start_local(model_ref or self.pi.session_model_ref()):
            notice = local_start_notice()
            if notice is not None:
                print(notice)

    @magic_arguments()
    @argument("instructions", nargs="*", help="Extra instructions for the fix ({name} is filled).")
    @argument("--model", metavar="PROVIDER/ID", help="The model for this run (e.g. local).")
    @line_magic
    def fix(self, line: str) -> None:
        """Ask the agent to explain and fix the last cell that failed. With the notebook's
        write tools it edits the cell (asking for approval); otherwise it shows the fixed cell.
        Wait for it with `await pi_notebook.current().wait()`."""
        args = parse_args(self.fix, line)
        self._writable()
        record = self.pi.history.last_error()
        if record is None:
            print("No cell has failed since pi_notebook was loaded: nothing to fix.")
            return
        instructions = fill_in(" ".join(args.instructions), self.pi.namespace)
        names = [t.name for t in self.pi.tool_offer.offered_tools()]  # what the model will get
        prompt = fix_prompt(record, instructions, tool_names=names)
        self.pi.tool_offer.refresh_function_tools()
        run = self.pi.start_run(prompt, model_ref=args.model, edit_cell=record.cell_id)
        run.view.show()

    @magic_arguments()
    @argument("state", nargs="?", choices=("on", "off"), help="Turn the change summary on or off.")
    @line_magic
    def agent_context(self, line: str) -> None:
        """Show, or turn on/off, the change summary: before each run the agent is told which
        cells ran since its last turn (stored in the session; %tree shows it)."""
        args = parse_args(self.agent_context, line)
        if args.state is not None:
            self.pi.context_enabled = args.state == "on"
        state = "on" if self.pi.context_enabled else "off"
        print(f"agent context: {state} (the cells run between turns are summarised for the agent)")

    @magic_arguments()
    @argument("text", nargs="*", help="The message ({name} is filled in).")
    @line_magic
    def steer(self, line: str) -> None:
        """Send a steering message into the live run: it reaches the model before its next
        call, after the current tool calls finish."""
        text = fill_in(line, self.pi.namespace).strip()
        if not text:
            raise UsageError("Usage: %steer TEXT")
        if not self.pi.steer(text):
            print(
                "No run is active, so there is nothing to steer. Use %follow_up to queue a "
                "message for the next run, or start one with %%agent."
            )
            return
        print(f"Steering: {text}")

    @magic_arguments()
    @argument("text", nargs="*", help="The message ({name} is filled in).")
    @line_magic
    def follow_up(self, line: str) -> None:
        """Queue a message for when the live run would end (or start a run if none is live)."""
        text = fill_in(line, self.pi.namespace).strip()
        if not text:
            raise UsageError("Usage: %follow_up TEXT")
        self._writable()
        if self.pi.follow_up(text):
            print(f"Follow-up queued: {text}")
            return
        run = self.pi.start_run(text)
        run.view.show()

    @line_magic
    def abort(self, line: str) -> None:
        """Abort the live run. Its partial reply is kept in the session."""
        if line.strip():
            raise UsageError("Usage: %abort (it takes no arguments)")
        print("Aborted the run." if self.pi.abort() else "No run is active.")

    @magic_arguments()
    @argument("instructions", nargs="*", help="What the summary should focus on.")
    @argument(
        "--keep",
        type=int,
        metavar="TOKENS",
        help="Keep about this many tokens of the latest turns verbatim (default: sized for the "
        "model's window); fewer leaves more room. Right after a compaction it redoes that one.",
    )
    @line_magic
    def compact(self, line: str) -> None:
        """Summarise older turns to free the context window (nothing is deleted from the file)."""
        args = parse_args(self.compact, line)
        instructions = " ".join(args.instructions).strip() or None
        if args.keep is not None and args.keep < 0:
            raise UsageError("%compact --keep takes a number of tokens, 0 or more")
        self._writable()
        if not self.pi.busy:
            self._harness_or_usage()

        async def run() -> str:
            harness = self._harness_or_usage()
            settings = harness.compaction_settings
            session = harness.session
            redone = None
            if args.keep is not None:
                harness.compaction_settings = dataclasses.replace(
                    settings, keep_recent_tokens=args.keep
                )
                branch = session.get_branch()
                if branch and branch[-1].type == "compaction":
                    # right after a compaction: redo it keeping less (a sibling of the first)
                    redone = branch[-1].id
                    session.set_leaf(branch[-1].parent_id)
            try:
                result = await harness.compact(custom_instructions=instructions)
            except BaseException:
                if redone is not None:
                    session.set_leaf(redone)
                raise
            finally:
                harness.compaction_settings = settings
            again = " (the previous compaction redone)" if redone is not None else ""
            return f"Compacted{again}: the summary replaces about {result.tokens_before:,} tokens."

        self.outcomes.report("%compact", run)
