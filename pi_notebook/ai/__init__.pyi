"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .abort import (
    AbortController as AbortController,
    AbortError as AbortError,
    AbortSignal as AbortSignal,
)
from .builder import MessageBuilder as MessageBuilder, calculate_cost as calculate_cost
from .event_stream import AssistantMessageEventStream as AssistantMessageEventStream
from .events import (
    AssistantMessageEvent as AssistantMessageEvent,
    DoneEvent as DoneEvent,
    ErrorEvent as ErrorEvent,
    StartEvent as StartEvent,
    TextDeltaEvent as TextDeltaEvent,
    TextEndEvent as TextEndEvent,
    TextStartEvent as TextStartEvent,
    ThinkingDeltaEvent as ThinkingDeltaEvent,
    ThinkingEndEvent as ThinkingEndEvent,
    ThinkingStartEvent as ThinkingStartEvent,
    ToolCallDeltaEvent as ToolCallDeltaEvent,
    ToolCallEndEvent as ToolCallEndEvent,
    ToolCallStartEvent as ToolCallStartEvent,
)
from .faux import (
    FauxProvider as FauxProvider,
    faux_assistant_message as faux_assistant_message,
    faux_text as faux_text,
    faux_thinking as faux_thinking,
    faux_tool_call as faux_tool_call,
    register_faux_provider as register_faux_provider,
)
from .models import (
    clamp_thinking_level as clamp_thinking_level,
    custom_model as custom_model,
    get_env_api_key as get_env_api_key,
    get_model as get_model,
    get_models as get_models,
    get_providers as get_providers,
    models_are_equal as models_are_equal,
    parse_model as parse_model,
    register_model as register_model,
    supported_thinking_levels as supported_thinking_levels,
)
from .options import ResponseInfo as ResponseInfo, StreamOptions as StreamOptions
from .overflow import is_context_overflow as is_context_overflow
from .producer import produce_stream as produce_stream
from .registry import (
    StreamFunction as StreamFunction,
    complete as complete,
    complete_simple as complete_simple,
    get_api_provider as get_api_provider,
    register_api_provider as register_api_provider,
    stream as stream,
    stream_simple as stream_simple,
    unregister_api_providers as unregister_api_providers,
)
from .system_message import (
    collapse_system_messages as collapse_system_messages,
    current_system_message as current_system_message,
    current_tools as current_tools,
    system_message_patch as system_message_patch,
    system_message_text as system_message_text,
)
from .transform import transform_messages as transform_messages
from .types import (
    AssistantMessage as AssistantMessage,
    Context as Context,
    Cost as Cost,
    DeferredHandle as DeferredHandle,
    ImageContent as ImageContent,
    Message as Message,
    Model as Model,
    ModelCost as ModelCost,
    StopReason as StopReason,
    SystemMessage as SystemMessage,
    TextContent as TextContent,
    ThinkingContent as ThinkingContent,
    ThinkingLevel as ThinkingLevel,
    Tool as Tool,
    ToolCall as ToolCall,
    ToolReference as ToolReference,
    ToolResultMessage as ToolResultMessage,
    Usage as Usage,
    UserMessage as UserMessage,
    now_ms as now_ms,
)
from .validation import (
    ToolArgumentsError as ToolArgumentsError,
    validate_tool_arguments as validate_tool_arguments,
)
