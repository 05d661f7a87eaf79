"""``%model`` (show or set the model, the local servers found, ``--tools``, recording and
replaying cassettes) and ``%thinking`` (the thinking level)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ...ai.thinking_levels import THINKING_LEVELS, ThinkingLevel
from ..default_model import NoModelError, SessionModelMissing, check_model_ref
from .base import AgentMagics, parse_args, reason_of

__all__ = ["ModelMagics"]


def _tool_calls_line(calls: bool, override: bool | None) -> str:
    said = " (%model --tools)" if override is not None else ""
    if calls:
        return f"tool calls: yes{said}"
    return f"tool calls: no{said}: this model cannot call tools: answers only"


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


@magics_class
class ModelMagics(AgentMagics):
    """%model, %thinking."""

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
        args = parse_args(self.model, line)
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
            raise UsageError(reason_of(exc)) from None
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

        self.outcomes.report("%model", switch)

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

        outcome = self.outcomes.add("local model servers", waiting=False)

        async def look() -> None:
            try:
                found = await discover_servers()
            except Exception as exc:  # a look that fails must not end the cell with a traceback
                outcome.finish(f"Could not look for local model servers: {reason_of(exc)}")
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

        args = parse_args(self.thinking, line)
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

        self.outcomes.now_or_queued("%thinking", put)
