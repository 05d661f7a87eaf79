"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .agent import Agent as Agent, AgentListener as AgentListener, AgentState as AgentState
from .call_stops import (
    CANCELLED_TOOL_MESSAGE as CANCELLED_TOOL_MESSAGE,
    ToolCallStops as ToolCallStops,
)
from .events import (
    AgentEndEvent as AgentEndEvent,
    AgentEvent as AgentEvent,
    AgentStartEvent as AgentStartEvent,
    MessageEndEvent as MessageEndEvent,
    MessageStartEvent as MessageStartEvent,
    MessageUpdateEvent as MessageUpdateEvent,
    ToolExecutionEndEvent as ToolExecutionEndEvent,
    ToolExecutionStartEvent as ToolExecutionStartEvent,
    ToolExecutionUpdateEvent as ToolExecutionUpdateEvent,
    TurnEndEvent as TurnEndEvent,
    TurnStartEvent as TurnStartEvent,
)
from .loop import (
    AgentEventStream as AgentEventStream,
    agent_loop as agent_loop,
    agent_loop_continue as agent_loop_continue,
    default_stream_fn as default_stream_fn,
    run_agent_loop as run_agent_loop,
    run_agent_loop_continue as run_agent_loop_continue,
)
from .tools import (
    AgentTool as AgentTool,
    AgentToolResult as AgentToolResult,
    ToolExecute as ToolExecute,
    ToolUpdateCallback as ToolUpdateCallback,
)
from .types import (
    AfterToolCallContext as AfterToolCallContext,
    AfterToolCallResult as AfterToolCallResult,
    AgentContext as AgentContext,
    AgentLoopConfig as AgentLoopConfig,
    AgentMessage as AgentMessage,
    BeforeToolCallContext as BeforeToolCallContext,
    BeforeToolCallResult as BeforeToolCallResult,
    CustomAgentMessage as CustomAgentMessage,
    QueueMode as QueueMode,
    RequestContext as RequestContext,
    RequestUpdate as RequestUpdate,
    StreamFn as StreamFn,
    ToolExecutionMode as ToolExecutionMode,
    TurnDecision as TurnDecision,
    TurnEndContext as TurnEndContext,
    TurnUpdate as TurnUpdate,
    default_convert_to_llm as default_convert_to_llm,
)

# `pi_notebook.agent.tool` is a fixed public name: the decorator of pi_notebook.tools (see
# __init__.py). A plain import here would be read as one of this package's own submodules.
import pi_notebook.tools as _tools

FunctionTool = _tools.FunctionTool
tool = _tools.tool
