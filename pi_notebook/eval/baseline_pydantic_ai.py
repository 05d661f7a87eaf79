"""The pydantic-ai baseline: an ``Agent`` on the same OpenAI-compatible endpoint, with the same
single ``python`` tool (a persistent Jupyter kernel), system prompt and output cap."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from .baseline_react import PYTHON_TOOL, Kernel
from .transcript import Step, Transcript

__all__ = ["run_pydantic_ai"]


def run_pydantic_ai(
    base_url: str,
    model: str,
    api_key: str | None,
    system: str,
    prompt: str,
    cwd: Path,
    *,
    max_tokens: int,
    time_limit: float,
    max_turns: int = 20,
) -> Transcript:
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.exceptions import AgentRunError, UnexpectedModelBehavior
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    result, deadline = Transcript(), time.monotonic() + time_limit
    kernel = Kernel(cwd)
    failed_calls: set[str] = set()
    provider = OpenAIProvider(base_url=base_url, api_key=api_key or "none")
    agent: Agent[None, str] = Agent(
        OpenAIChatModel(model, provider=provider),
        system_prompt=system,
        model_settings={"max_tokens": max_tokens},
    )

    @agent.tool_plain(name="python", description=PYTHON_TOOL)
    def python(code: str) -> str:
        output, failed = kernel.run(code, max(1.0, deadline - time.monotonic()))
        if failed:
            failed_calls.add(code)
        return output

    async def run() -> Any:
        limits = UsageLimits(request_limit=max_turns)
        try:
            return await asyncio.wait_for(agent.run(prompt, usage_limits=limits), time_limit)
        finally:
            await provider.client.close()

    messages: list[Any] = []
    try:
        outcome = asyncio.run(run())
        messages = outcome.all_messages()
    except TimeoutError:
        result.timed_out = True
    except (AgentRunError, UnexpectedModelBehavior) as exc:
        result.error = str(exc)[:500]
    except Exception as exc:  # the model's HTTP errors come as the OpenAI SDK's exceptions
        result.error = f"{type(exc).__name__}: {str(exc)[:500]}"
    finally:
        kernel.close()
    codes: dict[str, str] = {}
    for message in messages:
        if isinstance(message, ModelResponse):
            result.turns += 1
            result.tokens_in += message.usage.input_tokens
            result.tokens_out += message.usage.output_tokens
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            if text.strip():
                result.reply = text
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    args = part.args_as_dict()
                    codes[part.tool_call_id] = str(args.get("code", ""))
        else:
            for part in getattr(message, "parts", []):
                if isinstance(part, ToolReturnPart):
                    code = codes.get(part.tool_call_id, "")
                    text = str(part.content)
                    result.steps.append(Step(part.tool_name, code, text, code in failed_calls))
    return result
