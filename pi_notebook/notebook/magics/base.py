"""What the pi magics share: their base class, the parsing of a magic's line, and the display a
queued magic fills in (:class:`Outcome`).

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

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics
from IPython.core.magic_arguments import parse_argstring

from ..default_model import NoModelError
from .interpolate import InterpolationError, interpolate

if TYPE_CHECKING:
    from ..kernel_agent import NotebookAgent

__all__ = ["READ_ONLY", "AgentMagics", "Outcome", "Outcomes", "fill_in", "parse_args", "reason_of"]

READ_ONLY = (
    "{name} is open read-only: nothing is written to it. %session fork continues from it in a "
    "file of this notebook's own; %session new or %session open PATH works in another session."
)


def parse_args(magic: Callable[..., Any], line: str) -> Any:
    """The magic's ``magic_arguments`` parsed from ``line``; bad input is one UsageError."""
    try:
        return parse_argstring(magic, line)
    except UsageError:
        raise
    except (ValueError, SystemExit) as exc:  # shlex errors, argparse exits
        raise UsageError(f"{exc}. See %{magic.__name__}? for the usage.") from None


def reason_of(exc: Exception) -> str:
    """An exception's message (a KeyError's without the quotes ``str()`` adds)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def fill_in(text: str, namespace: dict[str, Any]) -> str:
    """``text`` with its ``{names}`` filled in from the notebook's variables."""
    try:
        return interpolate(text, namespace)
    except InterpolationError as exc:
        raise UsageError(str(exc)) from None


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


class Outcomes:
    """The displays of one kernel's queued magics and ``%fork --restore`` cards, shared by every
    magics class, which the ``post_run_cell`` hook re-sends (:meth:`resync`)."""

    def __init__(self, agent: NotebookAgent) -> None:
        self.pi = agent
        self.shown: list[Outcome] = []
        """Queued magics' outputs still to resync."""
        self.cards: list[Any] = []
        """``%fork --restore`` cards still to resync (``RestoreView``)."""

    def add(self, title: str, *, waiting: bool) -> Outcome:
        """A new display in this cell, re-sent until its text is final."""
        outcome = Outcome(title, waiting=waiting)
        self.shown.append(outcome)
        return outcome

    def report(self, title: str, operation: Callable[[], Awaitable[str | None]]) -> None:
        """Queue a harness operation; its outcome (or error) fills a display in this cell."""
        waiting = self.pi.busy
        outcome = self.add(title, waiting=waiting)

        async def run() -> None:
            try:
                message = await operation()
            except Exception as exc:
                outcome.finish(f"{title} failed: {reason_of(exc)}")
            else:
                outcome.finish(message or "")

        future = self.pi.enqueue(run)
        if not waiting:
            self.pi.run_inline(future)

    def now_or_queued(self, title: str, change: Callable[[], str]) -> None:
        """Apply a synchronous harness change at once when nothing is queued (its text printed,
        its UsageError raised), else at its turn in the queue, like :meth:`report`."""
        if not self.pi.busy:
            print(change())
            return

        async def run() -> str:
            return change()

        self.report(title, run)

    def resync(self) -> None:
        """The ``post_run_cell`` hook's part: re-send finished outcomes (see :class:`Outcome`)."""
        self.shown = [outcome for outcome in self.shown if outcome.resync()]
        for card in self.cards:
            card.resync()
        # a decided card changes no more: resynced once more, then dropped
        self.cards = [c for c in self.cards if c.card.get("state") in (None, "pending", "allowed")]


class AgentMagics(Magics):
    """A family of the pi magics: the kernel's agent and the displays its magics share. Each
    subclass is a ``magics_class`` of its own, registered by ``%load_ext pi_notebook``."""

    def __init__(self, shell: Any, agent: NotebookAgent, outcomes: Outcomes) -> None:
        super().__init__(shell)
        self.pi = agent
        self.outcomes = outcomes

    def _writable(self) -> None:
        """Refuse a change to a session opened read-only (``%session open --read-only``)."""
        if self.pi.read_only is not None:
            raise UsageError(READ_ONLY.format(name=self.pi.read_only.name))

    def _harness_or_usage(self) -> Any:
        try:
            return self.pi.harness
        except NoModelError as exc:
            raise UsageError(str(exc)) from None

    def _harness_or_none(self) -> Any:
        try:
            return self.pi.harness
        except NoModelError:
            return None
