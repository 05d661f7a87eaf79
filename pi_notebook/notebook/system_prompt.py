"""What the notebook agent's model is told before the conversation: the analyst prompt for what
the next request offers, the session's instruction sections kept up to date before each run
(:mod:`.instructions`), and what the two cost each request in tokens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .instructions import KEEP
from .room import request_overhead

if TYPE_CHECKING:
    from ..agent.tools import AgentTool
    from ..ai.types import Model
    from ..harness import AgentHarness, Session

__all__ = ["SystemPrompt"]


class SystemPrompt:
    """The instructions of the session ``session`` gives, for the tools ``offered`` to a model
    (None: the harness's) and whether ``frontend`` says a notebook is open in a browser."""

    def __init__(
        self,
        session: Callable[[], Session],
        offered: Callable[[Model | None], Sequence[AgentTool]],
        frontend: Callable[[], bool],
    ) -> None:
        self._session = session
        self._offered = offered
        self._frontend = frontend

    def default(self, model: Model | None) -> str:
        """The analyst prompt for what the next request offers ``model``: its tools, whether a
        notebook is connected, whether it takes images."""
        from .analyst_prompt import analyst_prompt

        tools = [t.name for t in self._offered(model)]
        images = model is not None and "image" in model.input
        return analyst_prompt(tools, frontend=self._frontend(), images=images)

    def update(
        self, harness: AgentHarness | None, *, preamble: object = KEEP, addendum: object = KEEP
    ) -> bool:
        """Bring the session's instruction sections up to date (the context files may have
        changed; ``preamble``/``addendum`` replace the session's, None removes the addendum),
        and give ``harness`` the default prompt when the session has none of its own. True when
        a system message was written."""
        from .instructions import current_sections, desired_instructions, write_instructions

        session = self._session()
        base = self.default(harness.model if harness is not None else None)
        current = current_sections(session)
        wanted = desired_instructions(current, base, preamble=preamble, addendum=addendum)
        written = write_instructions(session, current, wanted)
        if harness is not None:
            # The harness's prompt goes ahead of the session's: only for a session without one.
            own = session.build_context().system_prompt is not None
            harness.system_prompt = None if own else base
        return written

    def overhead(self, harness: AgentHarness) -> int:
        """Tokens each request of ``harness`` spends on the system prompt and the tools."""
        prompt = self._session().build_context().system_prompt
        if prompt is None:
            configured = harness.system_prompt
            prompt = configured if isinstance(configured, str) else self.default(harness.model)
        return request_overhead(prompt, self._offered(harness.model))
