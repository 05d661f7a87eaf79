"""The user messages waiting for a run: steering (after the current turn), follow-ups (when the
run would otherwise end) and the next turn's (before the next prompt), with how many of each a
turn takes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ..agent.types import AgentMessage, QueueMode
from ..ai.types import ImageContent, TextContent, UserMessage
from .harness_events import HarnessEvent, QueueUpdateEvent
from .hooks import AgentHarnessError

__all__ = ["AbortResult", "MessageQueues", "check_queue_mode", "user_message"]

_QUEUE_MODES = ("all", "one-at-a-time")


@dataclass(frozen=True, slots=True)
class AbortResult:
    """The queued messages ``abort()`` dropped."""

    cleared_steer: list[UserMessage]
    cleared_follow_up: list[UserMessage]


def user_message(text: str, images: Sequence[ImageContent] | None) -> UserMessage:
    if not isinstance(text, str):
        raise AgentHarnessError(
            "invalid_argument", f"text must be a str, not {type(text).__name__}"
        )
    content: list[TextContent | ImageContent] = [TextContent(text=text)]
    for image in images or ():
        if not isinstance(image, ImageContent):
            raise AgentHarnessError("invalid_argument", "images must be ImageContent blocks")
        content.append(image)
    return UserMessage(content=content)


def check_queue_mode(mode: str) -> QueueMode:
    if mode not in _QUEUE_MODES:
        raise AgentHarnessError(
            "invalid_argument", f"queue mode must be 'all' or 'one-at-a-time', not {mode!r}"
        )
    return mode  # type: ignore[return-value]


class MessageQueues:
    """``emit`` delivers the ``queue_update`` that follows each change a run makes."""

    def __init__(
        self,
        steering_mode: QueueMode,
        follow_up_mode: QueueMode,
        emit: Callable[[HarnessEvent], Awaitable[None]],
    ) -> None:
        self.steering_mode = check_queue_mode(steering_mode)
        self.follow_up_mode = check_queue_mode(follow_up_mode)
        self.steer: list[UserMessage] = []
        self.follow_up: list[UserMessage] = []
        self.next_turn: list[AgentMessage] = []
        self._emit = emit

    def update(self) -> QueueUpdateEvent:
        return QueueUpdateEvent(
            steer=list(self.steer),
            follow_up=list(self.follow_up),
            next_turn=list(self.next_turn),
        )

    async def _drain(self, queue: list[UserMessage], mode: QueueMode) -> list[AgentMessage]:
        if not queue:
            return []
        taken = list(queue) if mode == "all" else queue[:1]
        del queue[: len(taken)]
        try:
            await self._emit(self.update())
        except AgentHarnessError:
            queue[:0] = taken
            raise
        return list(taken)

    async def drain_steer(self) -> list[AgentMessage]:
        return await self._drain(self.steer, self.steering_mode)

    async def drain_follow_up(self) -> list[AgentMessage]:
        return await self._drain(self.follow_up, self.follow_up_mode)

    async def take_next_turn(self) -> list[AgentMessage]:
        """The messages queued for the next prompt (put back if the update cannot be told)."""
        queued, self.next_turn = self.next_turn, []
        if not queued:
            return []
        try:
            await self._emit(self.update())
        except AgentHarnessError:
            self.next_turn = queued + self.next_turn
            raise
        return queued
