"""Moving in the session tree: ``%tree`` (the tree view: look, continue, fork, label),
``%fork`` (move to an entry, a label or N user turns back; ``--restore`` also offers the
variables and cells of there) and ``%label``."""

from __future__ import annotations

import asyncio
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from ..locations import sibling_session_path
from .base import READ_ONLY, AgentMagics, parse_args, reason_of

__all__ = ["TreeMagics"]


@magics_class
class TreeMagics(AgentMagics):
    """%tree, %fork, %label."""

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
        args = parse_args(self.fork, line)
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

        self.outcomes.report("%fork", move)

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
        outcome = self.outcomes.add("%fork", waiting=waiting)
        card = RestoreView()
        card.show()
        self.outcomes.cards.append(card)

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
                outcome.finish(f"%fork failed: {reason_of(error)}")
                card.slot.finish("refused", f"Nothing was restored: {reason_of(error)}")

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
        args = parse_args(self.label, line)
        self._writable()

        text = args.name.strip()  # typed text is trimmed, as pi's label input trims it

        def put() -> str:  # resolved now, or when the cells above are done
            target = self._label_target(args.target)
            self.pi.session.append_label(target, text or None)
            return f"Labelled {target} as {text!r}." if text else f"Cleared the label of {target}."

        self.outcomes.now_or_queued("%label", put)

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
            path = sibling_session_path(self.pi.session_path)
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
