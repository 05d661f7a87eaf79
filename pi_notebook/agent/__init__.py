"""pi_notebook.agent — the agent core: loop, Agent, tool execution, hooks, queues.

``tool`` and ``FunctionTool`` (functions as tools) live in ``pi_notebook.tools``, which builds on
this package; they are re-exported here lazily, as DESIGN §2.2 names them, without the core
importing that layer.
"""

import typing as _typing

from .._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ..tools import FunctionTool, tool
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    ".agent": ("Agent", "AgentListener", "AgentState"),
    ".call_stops": ("CANCELLED_TOOL_MESSAGE", "ToolCallStops"),
    ".events": (
        "AgentEndEvent",
        "AgentEvent",
        "AgentStartEvent",
        "MessageEndEvent",
        "MessageStartEvent",
        "MessageUpdateEvent",
        "ToolExecutionEndEvent",
        "ToolExecutionStartEvent",
        "ToolExecutionUpdateEvent",
        "TurnEndEvent",
        "TurnStartEvent",
    ),
    ".loop": (
        "AgentEventStream",
        "agent_loop",
        "agent_loop_continue",
        "default_stream_fn",
        "run_agent_loop",
        "run_agent_loop_continue",
    ),
    ".tools": ("AgentTool", "AgentToolResult", "ToolExecute", "ToolUpdateCallback"),
    ".types": (
        "AfterToolCallContext",
        "AfterToolCallResult",
        "AgentContext",
        "AgentLoopConfig",
        "AgentMessage",
        "BeforeToolCallContext",
        "BeforeToolCallResult",
        "CustomAgentMessage",
        "QueueMode",
        "RequestContext",
        "RequestUpdate",
        "StreamFn",
        "ToolExecutionMode",
        "TurnDecision",
        "TurnEndContext",
        "TurnUpdate",
        "default_convert_to_llm",
    ),
    "..tools": ("FunctionTool", "tool"),
}
"""Where each public name lives: its submodule is imported when the name is first used
(``pi_notebook._lazy``)."""

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

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
]
