"""``AgentTool``: a tool the model can call, with the Python code that runs it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeAlias

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from ..ai.abort import AbortSignal
from ..ai.types import ImageContent, TextContent, Tool

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "ToolExecute",
    "ToolUpdateCallback",
]


class AgentToolResult(BaseModel):
    """What a tool returns: ``content`` goes to the model, ``details`` stays for display/logs;
    ``terminate=True`` on every result of a batch ends the run without another model call.

    ``is_error=True`` reports a failure without raising (pi 1.6's ``isError``): the model sees
    ``content`` as an error result, and ``details`` (images, structured data) are kept, which a
    raised exception's text-only result would lose."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    content: list[TextContent | ImageContent] = Field(default_factory=list)
    details: Any = None
    terminate: bool = False
    is_error: bool = Field(
        default=False,
        validation_alias=AliasChoices("is_error", "isError"),
        serialization_alias="isError",
    )


ToolUpdateCallback: TypeAlias = Callable[[AgentToolResult], None]
"""Called by a running tool with a partial result (progress); becomes ``tool_execution_update``."""

ToolExecute: TypeAlias = Callable[
    [str, dict[str, Any], AbortSignal | None, ToolUpdateCallback], Awaitable[AgentToolResult]
]
"""``execute(tool_call_id, params, signal, on_update)``."""


class AgentTool(Tool):
    """A ``Tool`` plus its implementation.

    ``parameters`` is a JSON-Schema dict, or a pydantic model class (turned into its schema).
    ``execution_mode="sequential"`` forces the whole batch it is in to run one call at a time.
    ``prepare_arguments`` may rewrite raw arguments before validation (compatibility shims).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str = ""
    execute: ToolExecute = Field(exclude=True)
    execution_mode: Literal["sequential", "parallel"] | None = Field(default=None, exclude=True)
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = Field(
        default=None, exclude=True
    )

    @field_validator("parameters", mode="before")
    @classmethod
    def _schema_from_model(cls, value: Any) -> Any:
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value.model_json_schema()
        return value
