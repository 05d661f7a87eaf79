"""``produce_stream``: run a provider body as the producer of an event stream.

Every provider (HTTP or faux) writes its reply through a ``MessageBuilder`` inside ``body``. This
wrapper gives them the shared contract for free: an aborted signal cancels the body at once and the
reply ends ``aborted`` with its partial content; any exception becomes an ``error`` event; a body
that returns without finishing is an error too. The stream itself never raises, and its error
texts never carry the request's credentials (``redaction``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .abort import AbortSignal
from .builder import MessageBuilder
from .event_stream import AssistantMessageEventStream
from .options import StreamOptions
from .redaction import request_redactor
from .types import Model

__all__ = ["ABORTED_MESSAGE", "describe_error", "produce_stream"]

ABORTED_MESSAGE = "Request was aborted"


def describe_error(exc: BaseException) -> str:
    """A one-line message for an exception (its text, else its class name)."""
    text = str(exc).strip()
    return text or type(exc).__name__


def produce_stream(
    model: Model,
    options: StreamOptions,
    body: Callable[[MessageBuilder], Awaitable[None]],
) -> AssistantMessageEventStream:
    """An event stream whose events ``body`` produces through a ``MessageBuilder``."""

    async def producer(stream: AssistantMessageEventStream) -> None:
        builder = MessageBuilder(model, stream, lambda: request_redactor(model, options))
        signal: AbortSignal | None = options.signal
        if signal is not None and signal.aborted:
            builder.fail(ABORTED_MESSAGE, aborted=True)
            return
        task = asyncio.current_task()
        assert task is not None
        remove = (
            signal.add_listener(lambda _s: task.cancel()) if signal is not None else lambda: None
        )
        try:
            await body(builder)
            if not builder.finished:
                builder.fail("The provider stream ended without a final event")
        except asyncio.CancelledError:
            if builder.finished:
                pass
            elif signal is not None and signal.aborted:
                builder.fail(ABORTED_MESSAGE, aborted=True)
            else:
                builder.fail("The request was cancelled", aborted=True)
                raise
            if signal is not None and signal.aborted:
                task.uncancel()
        except Exception as exc:
            if not builder.finished:
                aborted = signal is not None and signal.aborted
                builder.fail(ABORTED_MESSAGE if aborted else describe_error(exc), aborted=aborted)
        finally:
            remove()

    return AssistantMessageEventStream(producer)
