"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues.

``tool`` and ``FunctionTool`` (functions as tools) live in ``pi_notebook.tools``, which builds on
this package; they are re-exported here lazily, as DESIGN §2.2 names them, without the core
importing that layer.
"""

import typing as _typing

from .agent import Agent, AgentListener, AgentState
from .call_stops import CANCELLED_TOOL_MESSAGE, ToolCallStops
from .events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .loop import (
    AgentEventStream,
    agent_loop,
    agent_loop_continue,
    default_stream_fn,
    run_agent_loop,
    run_agent_loop_continue,
)
from .tools import AgentTool, AgentToolResult, ToolExecute, ToolUpdateCallback
from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    CustomAgentMessage,
    QueueMode,
    RequestContext,
    RequestUpdate,
    StreamFn,
    ToolExecutionMode,
    TurnDecision,
    TurnEndContext,
    TurnUpdate,
    default_convert_to_llm,
)

if _typing.TYPE_CHECKING:
    from ..tools import FunctionTool, tool
    from .validation import ToolArgumentsError, validate_tool_arguments

_FROM_TOOLS = ("FunctionTool", "tool")
_FROM_VALIDATION = ("ToolArgumentsError", "validate_tool_arguments")
"""Loaded on first use: jsonschema's import takes seconds where rfc3987-syntax is installed
(it builds a grammar at import), and %load_ext needs no validation (bench/kernel_bench.py)."""


def __getattr__(name: str) -> _typing.Any:  # PEP 562: the tools layer loads on first use
    if name in _FROM_TOOLS:
        from .. import tools

        return getattr(tools, name)
    if name in _FROM_VALIDATION:
        from . import validation

        return getattr(validation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM_TOOLS, *_FROM_VALIDATION])


__all__ = [
    "CANCELLED_TOOL_MESSAGE",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "Agent",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentEventStream",
    "AgentListener",
    "AgentLoopConfig",
    "AgentMessage",
    "AgentStartEvent",
    "AgentState",
    "AgentTool",
    "AgentToolResult",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "CustomAgentMessage",
    "FunctionTool",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "QueueMode",
    "RequestContext",
    "RequestUpdate",
    "StreamFn",
    "ToolArgumentsError",
    "ToolCallStops",
    "ToolExecute",
    "ToolExecutionEndEvent",
    "ToolExecutionMode",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolUpdateCallback",
    "TurnDecision",
    "TurnEndContext",
    "TurnEndEvent",
    "TurnStartEvent",
    "TurnUpdate",
    "agent_loop",
    "agent_loop_continue",
    "default_convert_to_llm",
    "default_stream_fn",
    "run_agent_loop",
    "run_agent_loop_continue",
    "tool",
    "validate_tool_arguments",
]
