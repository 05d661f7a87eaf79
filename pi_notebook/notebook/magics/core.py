"""The cell and line magics. Every magic has ``magic_arguments`` help (``%fork?``); bad input is
a ``UsageError`` — one line, no traceback — and changes nothing.

``%model``, ``%compact``, ``%fork``, ``%label``, ``%thinking LEVEL`` and ``%tools add/remove``
change the harness, so they go through the agent's queue: behind a run still streaming ("Run
All") they take effect — and resolve their target — when their turn comes, as if the cells above
had finished. Their output is a display in the cell that ran them (:class:`Outcome`), filled in
when the operation ends. With nothing queued, ``%model`` (unless it starts the local model),
``%label``, ``%thinking`` and ``%tools`` do their work in the magic itself, so code after them
sees the change also when it called them with ``run_line_magic``; ``%compact``, ``%fork`` (and a
local model's start) begin at once and a typed line is followed by a wait for them (see
``input_rewrite``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ...ai.thinking_levels import THINKING_LEVELS, ThinkingLevel
from ..approval_policy import DECISIONS
from ..default_model import (
    NoModelError,
    SessionModelMissing,
    check_model_ref,
    local_start_notice,
    will_start_local,
)
from ..locations import sibling_session_path
from ..session_files import open_session
from ..session_lock import lock_holder
from ..workspace.fix import fix_prompt
from .guard import budget_lines, cap_value
from .input_rewrite import EMPTY_PROMPT
from .interpolate import InterpolationError, interpolate

if TYPE_CHECKING:
    from ...harness.session import Session
    from ..kernel_agent import NotebookAgent

__all__ = ["PiMagics", "first_sentence"]


def _parse(magic: Callable[..., Any], line: str) -> Any:
    try:
        return parse_argstring(magic, line)
    except UsageError:
        raise
    except (ValueError, SystemExit) as exc:  # shlex errors, argparse exits
        raise UsageError(f"{exc}. See %{magic.__name__}? for the usage.") from None


def _reason(exc: Exception) -> str:
    """An exception's message (a KeyError's without the quotes ``str()`` adds)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def _tool_calls_line(calls: bool, override: bool | None) -> str:
    said = " (%model --tools)" if override is not None else ""
    if calls:
        return f"tool calls: yes{said}"
    return f"tool calls: no{said}: this model cannot call tools: answers only"


class Outcome:
    """A queued magic's output: a display in the cell that ran the magic, updated when the
    operation ends. nbclient keeps only messages sent while a cell runs, so the final text is
    re-sent once more by the next ``post_run_cell`` (:meth:`resync`): an executed notebook shows
    it in the magic's cell even when the operation ended between cells."""

    def __init__(self, title: str, *, waiting: bool) -> None:
        from IPython.display import display

        self.title = title
        self.text: str | None = None
        self._resent = False
        first = f"{title}: queued, runs when the run above ends" if waiting else f"{title}: …"
        self._handle = display({"text/plain": first}, raw=True, display_id=True)

    def finish(self, text: str) -> None:
        self.text = text
        self._resent = False
        self._send()

    def resync(self) -> bool:
        """Re-send the final text once; False when this outcome needs no more resyncs."""
        if self.text is None:
            return True
        if not self._resent:
            self._resent = True
            self._send()
        return False

    def _send(self) -> None:
        if self._handle is not None:
            self._handle.update({"text/plain": self.text or ""}, raw=True)


def _check_recordable(path: Path) -> None:
    """Refuse a cassette path that cannot be appended to (``%model --record``): found now, not
    after a run whose replies were silently not recorded."""
    if path.is_dir():
        raise UsageError(f"--record {path}: that is a directory; give a file path")
    if not path.parent.is_dir():
        raise UsageError(f"--record {path}: the directory {path.parent} does not exist")
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        raise UsageError(f"--record {path}: cannot write it ({exc.strerror or exc})") from None
    if not existed:
        path.unlink(missing_ok=True)


def first_sentence(text: str) -> str:
    """A tool description's first sentence, its wrapped lines joined (a listing line)."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    found = re.match(r"(.+?[.!?])(?=\s+[A-Z]|$)", paragraph)
    return found.group(1) if found else paragraph


def _fill(text: str, namespace: dict[str, Any]) -> str:
    try:
        return interpolate(text, namespace)
    except InterpolationError as exc:
        raise UsageError(str(exc)) from None


READ_ONLY = (
    "{name} is open read-only: nothing is written to it. %session fork continues from it in a "
    "file of this notebook's own; %session new or %session open PATH works in another session."
)


@magics_class
class PiMagics(Magics):
    """%%agent, %fix, %agent_context, %steer, %follow_up, %abort, %fork, %model, %thinking,
    %tools, %compact, %tree, %session, %label."""

    def __init__(self, shell: Any, agent: NotebookAgent) -> None:
        super().__init__(shell)
        self.pi = agent
        self.outcomes: list[Outcome] = []
        """Queued magics' outputs still to resync (see :meth:`resync`)."""
        self.cards: list[Any] = []
        """``%fork --restore`` cards still to resync (``RestoreView``)."""

    # --- helpers ---------------------------------------------------------------------------------

    def _report(self, title: str, operation: Callable[[], Awaitable[str | None]]) -> None:
        """Queue a harness operation; its outcome (or error) fills a display in this cell."""
        waiting = self.pi.busy
        outcome = Outcome(title, waiting=waiting)
        self.outcomes.append(outcome)

        async def run() -> None:
            try:
                message = await operation()
            except Exception as exc:
                outcome.finish(f"{title} failed: {_reason(exc)}")
            else:
                outcome.finish(message or "")

        future = self.pi.enqueue(run)
        if not waiting:
            self.pi.run_inline(future)

    def resync(self) -> None:
        """The ``post_run_cell`` hook's part: re-send finished outcomes (see :class:`Outcome`)."""
        self.outcomes = [outcome for outcome in self.outcomes if outcome.resync()]
        for card in self.cards:
            card.resync()
        # a decided card changes no more: resynced once more, then dropped
        self.cards = [c for c in self.cards if c.card.get("state") in (None, "pending", "allowed")]

    def _writable(self) -> None:
        """Refuse a change to a session opened read-only (``%session open --read-only``)."""
        if self.pi.read_only is not None:
            raise UsageError(READ_ONLY.format(name=self.pi.read_only.name))

    def _harness_or_usage(self) -> Any:
        try:
            return self.pi.harness
        except NoModelError as exc:
            raise UsageError(str(exc)) from None

    # --- %%agent ---------------------------------------------------------------------------------

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
        args = _parse(self.agent, line)
        self._writable()
        prompt = _fill(cell, self.pi.namespace).strip()
        if not prompt:
            raise UsageError(EMPTY_PROMPT)
        if args.model:
            try:
                check_model_ref(args.model)
            except (KeyError, ValueError) as exc:
                raise UsageError(_reason(exc)) from None
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

    # --- the workspace ---------------------------------------------------------------------------

    @magic_arguments()
    @argument("instructions", nargs="*", help="Extra instructions for the fix ({name} is filled).")
    @argument("--model", metavar="PROVIDER/ID", help="The model for this run (e.g. local).")
    @line_magic
    def fix(self, line: str) -> None:
        """Ask the agent to explain and fix the last cell that failed. With the notebook's
        write tools it edits the cell (asking for approval); otherwise it shows the fixed cell.
        Wait for it with `await pi_notebook.current().wait()`."""
        args = _parse(self.fix, line)
        self._writable()
        record = self.pi.history.last_error()
        if record is None:
            print("No cell has failed since pi_notebook was loaded: nothing to fix.")
            return
        instructions = _fill(" ".join(args.instructions), self.pi.namespace)
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
        args = _parse(self.agent_context, line)
        if args.state is not None:
            self.pi.context_enabled = args.state == "on"
        state = "on" if self.pi.context_enabled else "off"
        print(f"agent context: {state} (the cells run between turns are summarised for the agent)")

    # --- steering --------------------------------------------------------------------------------

    @magic_arguments()
    @argument("text", nargs="*", help="The message ({name} is filled in).")
    @line_magic
    def steer(self, line: str) -> None:
        """Send a steering message into the live run: it reaches the model before its next
        call, after the current tool calls finish."""
        text = _fill(line, self.pi.namespace).strip()
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
        text = _fill(line, self.pi.namespace).strip()
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

    # --- the tree --------------------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "target",
        nargs="?",
        default="-1",
        help="An entry id, a label, or -N for N user turns back (default -1).",
    )
    @argument("--summarize", action="store_true", help="Summarise the branch being left.")
    @argument(
        "--restore",
        action="store_true",
        help="Also offer to restore the variables (from the checkpoint there) and to undo the "
        "agent's cell changes on the branch being left; a card asks first.",
    )
    @line_magic
    def fork(self, line: str) -> None:
        """Move the session to TARGET; the next %%agent continues from there as a new branch."""
        args = _parse(self.fork, line)
        self._writable()
        now = not self.pi.busy  # else the target is the one there when the cells above are done
        target = self._resolve_target(args.target) if now else None
        if now:
            self._harness_or_usage()
        if args.restore:
            self._fork_restoring(target, args.target, args.summarize)
            return

        async def move() -> str:
            harness = self._harness_or_usage()
            where_to = target or self._resolve_target(args.target)
            result = await harness.navigate_tree(where_to, summarize=args.summarize)
            if result.cancelled:
                return "The move was cancelled."
            return self._moved_words(result.editor_text)

        self._report("%fork", move)

    def _moved_words(self, editor_text: str | None) -> str:
        where = self.pi.session.leaf_id or "the start"
        done = f"Moved to {where}. The next %%agent continues from here as a new branch."
        if editor_text:
            done += f"\nThe prompt there was: {editor_text}"
        return done

    def _fork_restoring(self, target: str | None, typed: str, summarize: bool) -> None:
        """``%fork TARGET --restore``: the move, then the restore card in this cell. The cell
        waits for the move only (``settled``); the card waits in the queue, so a ``%%agent``
        after it starts once the card is answered."""
        from ..restore.offer import move_with_restore
        from ..widgets.restore_view import RestoreView

        waiting = self.pi.busy
        outcome = Outcome("%fork", waiting=waiting)
        self.outcomes.append(outcome)
        card = RestoreView()
        card.show()
        self.cards.append(card)

        async def move() -> str | None:
            harness = self._harness_or_usage()
            where_to = target or self._resolve_target(typed)
            result = await harness.navigate_tree(where_to, summarize=summarize)
            if result.cancelled:
                outcome.finish("The move was cancelled.")
                return None
            outcome.finish(self._moved_words(result.editor_text))
            return where_to

        moved, whole = move_with_restore(self.pi, card.slot, move, explicit=True)

        def failed(future: asyncio.Future[Any]) -> None:
            error = None if future.cancelled() else future.exception()
            if isinstance(error, Exception):
                outcome.finish(f"%fork failed: {_reason(error)}")
                card.slot.finish("refused", f"Nothing was restored: {_reason(error)}")

        whole.add_done_callback(failed)
        if not waiting:
            self.pi.run_inline(moved)

    def _resolve_target(self, target: str) -> str:
        from ...ai.types import UserMessage

        session = self.pi.session
        if target.startswith("-") and target[1:].isdigit():
            turns = int(target[1:])
            users = [
                e.id
                for e in session.get_branch()
                if isinstance(getattr(e, "message", None), UserMessage)
            ]
            if turns < 1 or turns > len(users):
                raise UsageError(f"{target}: the current branch has {len(users)} user turn(s).")
            return users[-turns]
        if session.get_entry(target) is not None:
            return target
        ids = session.index.ids  # (no entry read)
        for entry_id in reversed(ids):  # the newest entry with that label
            if session.get_label(entry_id) == target:
                return entry_id
        if len(target) >= 4:  # a short id as %tree shows it (or any unique prefix)
            matches = [i for i in ids if i.endswith(target) or i.startswith(target)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise UsageError(f"{target!r} matches {len(matches)} entries: give more of the id.")
        raise UsageError(f"No entry or label {target!r} in the session (see %tree).")

    @magic_arguments()
    @argument("name", help="The label.")
    @argument("target", nargs="?", help="An entry id or label (default: the current entry).")
    @line_magic
    def label(self, line: str) -> None:
        """Label an entry of the session (to %fork back to it by name)."""
        args = _parse(self.label, line)
        self._writable()

        text = args.name.strip()  # typed text is trimmed, as pi's label input trims it

        def put() -> str:  # resolved now, or when the cells above are done
            target = self._label_target(args.target)
            self.pi.session.append_label(target, text or None)
            return f"Labelled {target} as {text!r}." if text else f"Cleared the label of {target}."

        self._now_or_queued("%label", put)

    def _label_target(self, target: str | None) -> str:
        entry = self._resolve_target(target) if target else self.pi.session.leaf_id
        if entry is None:
            raise UsageError("The session is empty: nothing to label yet.")
        return entry

    @line_magic
    def tree(self, line: str) -> None:
        """Show the session tree: click a node to see it, continue from it, fork, label."""
        if line.strip():
            raise UsageError("Usage: %tree")
        from ..restore.offer import move_with_restore
        from ..widgets.tree_view import TreeView  # loads the widget libraries on first use

        view = TreeView(self.pi.session)
        harness = self._harness_or_none()

        async def navigate(entry_id: str, summarize: bool) -> None:
            async def move() -> str | None:
                if harness is None:
                    self.pi.session.set_leaf(entry_id)
                    return entry_id
                result = await harness.navigate_tree(entry_id, summarize=summarize)
                return None if result.cancelled else entry_id

            if self.pi.read_only is not None:
                await move()
            else:
                # the restore card waits in the queue (a %%agent after it waits for the
                # answer); the tree is busy only until the move is done
                moved, _whole = move_with_restore(self.pi, view.restore_slot, move, explicit=False)
                await moved
            view.refresh()

        def fork(entry_id: str) -> None:
            path = self._new_session_path()
            self.pi.session.fork(path, entry_id=entry_id, position="at")
            view.notice = f"Forked into {path.name}; open it with %session open {path}"

        def label(entry_id: str, text: str) -> None:
            if self.pi.read_only is not None:
                raise RuntimeError(READ_ONLY.format(name=self.pi.read_only.name))
            self.pi.session.append_label(entry_id, text or None)
            view.refresh()

        async def compact() -> None:
            if harness is None:
                raise RuntimeError("No model yet: choose one with %model first")
            await self.pi.enqueue(lambda: harness.compact())
            view.refresh()

        view.on_navigate = navigate
        view.on_fork = fork
        view.on_label = label
        view.on_compact = compact
        self.pi.tree_views.append(view)
        view.show()

    def _harness_or_none(self) -> Any:
        try:
            return self.pi.harness
        except NoModelError:
            return None

    # --- model, thinking, tools ------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "model",
        nargs="?",
        help="PROVIDER/MODEL-ID, local for the embedded model, or a model on a server on this "
        "machine: ollama/NAME, lmstudio/NAME, llamacpp/NAME (KIND:PORT/NAME on another port). "
        "Without it: the current model and the servers found.",
    )
    @argument("--record", metavar="PATH", help="Record every model reply into a cassette file.")
    @argument(
        "--replay",
        metavar="PATH",
        help="Answer model calls from a cassette file (no network; an unrecorded prompt fails).",
    )
    @argument("--live", action="store_true", help="Stop recording or replaying.")
    @argument(
        "--tools",
        choices=("yes", "no", "auto"),
        help="Whether the model is offered tools: yes or no overrides what is known of it "
        "(a small model that cannot call them only answers); auto (the default) goes by the model.",
    )
    @line_magic
    def model(self, line: str) -> None:
        """Show the model (with its context window and the session's cost so far), or set it.
        --record / --replay PATH record model replies into a cassette or replay them."""
        args = _parse(self.model, line)
        if args.record or args.replay or args.live:
            self._use_cassette(args.record, args.replay, args.live)
        offer = self.pi.tool_offer
        if args.tools is not None:
            offer.tool_calls_override = {"yes": True, "no": False}.get(args.tools)
        elif args.model:
            offer.tool_calls_override = None  # a user's word was about the previous model
        if not args.model:
            if args.tools is not None:
                print(_tool_calls_line(offer.model_calls_tools(), offer.tool_calls_override))
                return
            if args.record or args.replay or args.live:
                return
            self._show_model()
            self._list_servers()
            return
        ref = args.model
        self._writable()
        try:
            check_model_ref(ref)
        except (KeyError, ValueError) as exc:
            raise UsageError(_reason(exc)) from None
        if not self.pi.busy:  # the switch is made at once, also when called from code
            chosen = self.pi.resolve_model_now(ref)
            if chosen is not None:
                self.pi.use_model_now(chosen)
                print(f"Model: {chosen.provider}/{chosen.id}")
                return
            self.pi.prepare_now()  # the local model starts: the cell waits for it (settled)

        async def switch() -> str:
            chosen = await self.pi.resolve_model(ref)
            harness = await self.pi.ensure_harness(chosen)
            harness.set_model(chosen)
            return f"Model: {chosen.provider}/{chosen.id}"

        self._report("%model", switch)

    def _show_model(self) -> None:
        try:
            harness = self.pi.harness
        except SessionModelMissing as exc:
            print(exc)
            return
        except NoModelError as exc:
            print(self.pi.pending_model_note() or exc)
            return
        from ...ai.redaction import request_redactor

        m, offer = harness.model, self.pi.tool_offer
        # where requests go, without credentials (a URL password, a key in the query)
        where = f" at {request_redactor(m).scrub(m.base_url)}" if m.base_url else ""
        print(
            f"{m.provider}/{m.id} ({m.name}) via {m.api}{where}\n"
            f"context window: {m.context_window:,} tokens, max output {m.max_tokens:,}\n"
            f"thinking: {harness.thinking_level}\n"
            f"{_tool_calls_line(offer.model_calls_tools(), offer.tool_calls_override)}\n"
            f"session cost so far: ${self.pi.session_cost():.4f}"
        )
        if self.pi.cassette is not None:
            print(f"{self.pi.cassette.mode}ing model replies: {self.pi.cassette.path}")

    def _list_servers(self) -> None:
        """Show the model servers running on this machine (Ollama, LM Studio, llama.cpp) and
        their models, found by a task on the kernel's loop (short timeouts, no waiting behind a
        run); the cell waits for it only when nothing else is running."""
        from ...ai.local_servers import describe_servers, discover_servers

        outcome = Outcome("local model servers", waiting=False)
        self.outcomes.append(outcome)

        async def look() -> None:
            try:
                found = await discover_servers()
            except Exception as exc:  # a look that fails must not end the cell with a traceback
                outcome.finish(f"Could not look for local model servers: {_reason(exc)}")
            else:
                outcome.finish(describe_servers(found))

        task = asyncio.ensure_future(look())
        if not self.pi.busy:
            self.pi.run_inline(task)

    def _use_cassette(self, record: str | None, replay: str | None, live: bool) -> None:
        if sum((bool(record), bool(replay), live)) > 1:
            raise UsageError("Choose one of --record, --replay and --live.")
        if live:
            self.pi.cassette = None
            print("Model calls go to the models directly.")
            return
        from ...ai.cassette import Cassette, CassetteError  # pydantic models: not at %load_ext

        try:
            if record:
                _check_recordable(Path(record).expanduser())
                self.pi.cassette = Cassette.record(Path(record).expanduser())
            else:
                self.pi.cassette = Cassette.replay(Path(str(replay)).expanduser())
        except (CassetteError, OSError) as exc:
            raise UsageError(str(exc)) from None
        cassette = self.pi.cassette
        if cassette.mode == "record":
            print(f"Recording model replies into {cassette.path}")
        else:
            count = len(cassette.interactions)
            print(f"Replaying model replies from {cassette.path} ({count} recorded)")

    @magic_arguments()
    @argument("level", nargs="?", choices=THINKING_LEVELS, help="The thinking level.")
    @line_magic
    def thinking(self, line: str) -> None:
        """Show or set the thinking level (clamped to what the model supports). Behind a run
        still streaming, the new level applies when the cells above are done."""
        from ...ai.models import clamp_thinking_level, supported_thinking_levels

        args = _parse(self.thinking, line)
        if not args.level:
            harness = self._harness_or_usage()
            levels = ", ".join(supported_thinking_levels(harness.model))
            print(f"thinking: {harness.thinking_level} (this model supports: {levels})")
            return
        wanted: ThinkingLevel = args.level
        self._writable()

        def put() -> str:
            harness = self._harness_or_usage()
            # the harness clamps it and remembers what was asked, so a later %model that
            # supports it gets the level the user typed
            harness.set_thinking_level(wanted)
            level = clamp_thinking_level(harness.model, wanted)
            note = "" if level == wanted else f" ({wanted} is not supported by this model)"
            return f"thinking: {level}{note}"

        self._now_or_queued("%thinking", put)

    @magic_arguments()
    @argument("action", nargs="?", default="list", choices=("list", "add", "remove"))
    @argument("names", nargs="*", help="Tool or function names.")
    @line_magic
    def tools(self, line: str) -> None:
        """List the tools, add notebook functions or built-ins, or remove them. Behind a run
        still streaming, adding and removing apply when the cells above are done."""
        args = _parse(self.tools, line)
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
                        raise UsageError(_reason(exc)) from None
                return "\n".join(done)
            active = {row[0] for row in self.pi.tool_offer.tool_listing() if row[2]}
            for name in names:
                if name not in active:
                    raise UsageError(f"No active tool named {name!r} (see %tools list)")
            for name in names:
                self.pi.tool_offer.remove_tool(name)
                done.append(f"Removed the tool {name}")
            return "\n".join(done)

        self._now_or_queued("%tools", change)

    @magic_arguments()
    @argument("target", nargs="?", help="A tool name, or 'all'.")
    @argument("decision", nargs="?", choices=DECISIONS, help="allow, ask or deny.")
    @line_magic
    def approve(self, line: str) -> None:
        """Show the approval policy, or set it for one tool or all: allow (run without asking),
        ask (Allow / Deny in the run view; the default) or deny (refused; the model is told).
        Recorded in the session. PI_NOTEBOOK_APPROVE (e.g. run_python=allow) sets it from the
        kernel's environment, for notebooks executed without anyone to click."""
        args = _parse(self.approve, line)
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

    def _now_or_queued(self, title: str, change: Callable[[], str]) -> None:
        """Apply a synchronous harness change at once when nothing is queued (its text printed,
        its UsageError raised), else at its turn in the queue, like :meth:`_report`."""
        if not self.pi.busy:
            print(change())
            return

        async def run() -> str:
            return change()

        self._report(title, run)

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
        args = _parse(self.compact, line)
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

        self._report("%compact", run)

    # --- the agent's instructions ----------------------------------------------------------------

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

        self._report("%system", change)

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

    # --- sessions --------------------------------------------------------------------------------

    @magic_arguments()
    @argument("action", nargs="?", default="info", choices=("info", "new", "open", "fork", "name"))
    @argument("value", nargs="*", help="PATH for open, NAME for name.")
    @argument(
        "--read-only",
        action="store_true",
        help="open: only look at the session (runs and other changes are refused), e.g. one "
        "another kernel is writing.",
    )
    @line_magic
    def session(self, line: str) -> None:
        """Show the session, start a new one, open a session file, continue the session in a
        copy of this notebook's own (fork), or name the session."""
        args = _parse(self.session, line)
        value = " ".join(args.value).strip()
        if args.action == "info":
            session = self.pi.session
            totals = session.usage_totals()  # replies, tool results, summaries, usage entries
            unsaved = len(session.unsaved_entries)
            print(
                f"session {session.id}{f' ({session.name})' if session.name else ''}\n"
                f"file: {session.path}\n"
                f"entries: {len(session)}, leaf: {session.leaf_id}\n"
                f"tokens: {totals.total_tokens:,} (input {totals.input:,}, output "
                f"{totals.output:,}, cache read {totals.cache_read:,}, cache write "
                f"{totals.cache_write:,})\n"
                f"cost so far: ${totals.cost:.4f}\n"
                f"{budget_lines(self.pi.budget)}"
                + (f"\nnot saved yet: {unsaved} entries ({session.write_error})" if unsaved else "")
            )
        elif args.action == "name":
            if not value:
                raise UsageError("Usage: %session name NAME")
            self._writable()
            self.pi.session.append_session_info(value)
            print(f"Named the session {value!r}.")
        elif args.action == "fork":
            path = Path(value).expanduser() if value else self._new_session_path()
            if path.exists():
                raise UsageError(f"{path} already exists: give another PATH")
            original = self.pi.session
            self._switch(
                original.fork(path),
                f"Continuing {original.path.name if original.path else 'the session'} in a "
                f"copy: {path}",
                read_only=False,
            )
        elif args.action == "new":
            path = Path(value).expanduser() if value else self._new_session_path()
            if path.exists():
                raise UsageError(f"{path} already exists: use %session open {path}")
            self._switch(open_session(path), f"New session: {path}", read_only=False)
        else:
            if not value:
                raise UsageError("Usage: %session open PATH")
            path = Path(shlex.split(value)[0]).expanduser()
            if not path.exists():
                raise UsageError(f"No session file at {path}")
            from ...harness.session import Session

            held = None if path == self.pi.session_lock.path else lock_holder(path)
            if held is not None and not args.read_only:
                raise UsageError(
                    f"{path.name} is open in {held}: look at it with "
                    f"%session open {path} --read-only (then %session fork continues from it "
                    "in a file of this notebook's own)."
                )
            try:
                session = Session.open(path)
            except Exception as exc:
                raise UsageError(f"Cannot open {path}: {exc}") from None
            how = ", read-only" if args.read_only else ""
            message = f"Opened {path} ({len(session)} entries{how})"
            self._switch(session, message, read_only=args.read_only)

    def _new_session_path(self) -> Path:
        return sibling_session_path(self.pi.session_path)

    def _switch(self, session: Session, message: str, *, read_only: bool) -> None:
        if self.pi.busy:
            raise UsageError("A run is in progress: wait for it or %abort it first.")
        self.pi.read_only = session.path if read_only else None
        self.pi.use_session(session)
        print(message)
