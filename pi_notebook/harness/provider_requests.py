"""The stream function a harness run hands the agent loop: the one layer between the loop and
the providers. It applies the turn's stream options and the ``before_provider_request`` hooks,
checks the run's budget before the request goes out, and attaches the payload and response
hooks."""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..ai.event_stream import AssistantMessageEventStream
from ..ai.events import ErrorEvent
from ..ai.options import ResponseInfo, StreamOptions
from ..ai.registry import stream_simple_options
from ..ai.types import AssistantMessage, Context, Model, Usage
from .budget import BUDGET_STOP_TYPE
from .configuration import HarnessParts
from .harness_events import AfterProviderResponseEvent
from .hooks import (
    AgentHarnessError,
    BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult,
    BeforeProviderRequestEvent,
    BeforeProviderRequestResult,
    coerce_result,
)

if TYPE_CHECKING:
    from .prompt_run import PromptRun

__all__ = ["ProviderRequests"]


class ProviderRequests:
    """The provider requests of one run (``run`` says its turn snapshot and budget meter)."""

    def __init__(self, parts: HarnessParts, run: PromptRun) -> None:
        self._config = parts.config
        self._writer = parts.writer
        self._hooks = parts.hooks
        self._emit = parts.emit
        self._run = run

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        """One request: the loop's ``options`` (key, signal, reasoning, session id) with the
        turn's stream options, as the hooks patched them, and the hooks of this harness."""
        snapshot = self._run.turn
        session_id = snapshot.session_id if snapshot is not None else self._writer.session.id
        request = snapshot.stream_options if snapshot is not None else self._config.stream_options
        for handler in self._hooks.handlers("before_provider_request"):
            event = BeforeProviderRequestEvent(model, session_id, request)
            value = await self._hooks.call("before_provider_request", handler, event)
            if value is None:
                continue
            try:
                patch = coerce_result(value, BeforeProviderRequestResult)
                request = request.patched(patch.stream_options)
            except (TypeError, ValueError) as exc:
                raise AgentHarnessError(
                    "hook", f"before_provider_request hook returned {exc}"
                ) from exc
        max_tokens = options.max_tokens
        meter = self._run.meter
        if meter is not None:
            verdict = meter.check(model, context, max_tokens, options.reasoning)
            await self._emit(meter.event())
            if not verdict.allowed:
                return self._budget_stop(model, verdict.reason or "Budget: stopped.")
            if verdict.max_tokens is not None:
                max_tokens = verdict.max_tokens
        per_call = replace(
            request.apply_to(options),
            reasoning=None if options.reasoning == "off" else options.reasoning,
            max_tokens=max_tokens,
            session_id=session_id,
            on_payload=self._on_payload,
            on_response=self._on_response,
        )
        produced = (self._config.stream_fn or stream_simple_options)(model, context, per_call)
        return await produced if inspect.isawaitable(produced) else produced

    def _budget_stop(self, model: Model, reason: str) -> AssistantMessageEventStream:
        """End the run before a request a cap forbids, as an abort does: the reply is an empty
        ``aborted`` one saying why (providers never see it again), and the session records
        the reason as a message after it."""
        session = self._writer.session
        self._writer.defer(
            lambda: session.append_custom_message(BUDGET_STOP_TYPE, reason, display=True)
        )
        stopped = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="aborted",
            error_message=reason,
        )
        return AssistantMessageEventStream.of([ErrorEvent(reason="aborted", error=stopped)])

    async def _on_payload(self, payload: dict[str, Any], model: Model) -> dict[str, Any]:
        for handler in self._hooks.handlers("before_provider_payload"):
            event = BeforeProviderPayloadEvent(model, payload)
            value = await self._hooks.call("before_provider_payload", handler, event)
            if value is not None:
                result = self._hooks.coerce(
                    "before_provider_payload", value, BeforeProviderPayloadResult
                )
                payload = result.payload
        return payload

    async def _on_response(self, response: ResponseInfo, _model: Model) -> None:
        headers = {str(k): str(v) for k, v in response.headers.items()}
        await self._emit(AfterProviderResponseEvent(status=response.status, headers=headers))
