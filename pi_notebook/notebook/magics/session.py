"""``%session``: show the session, start a new one, open a session file (``--read-only`` for
one another kernel writes), continue it in a copy of this notebook's own, or name it."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..locations import sibling_session_path
from ..session_files import open_session
from ..session_lock import lock_holder
from .base import AgentMagics, parse_args
from .guard import budget_lines

if TYPE_CHECKING:
    from ...harness.session import Session

__all__ = ["SessionMagics"]


@magics_class
class SessionMagics(AgentMagics):
    """%session."""

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
        args = parse_args(self.session, line)
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
