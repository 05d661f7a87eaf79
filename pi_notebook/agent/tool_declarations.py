"""Tool-list changes declared to the model before each request (pi 1.6's ``declareToolChanges``).

Two lists of tools meet in the loop: ``AgentContext.tools``, what the loop can run, and what the
model is told it may call, which is the replay of the transcript's system messages. pi 1.6
compares them before every request, not once per run: a difference becomes a system message
with ``tools_added`` / ``tools_removed`` that is reported (message_start, message_end) and sent
like any other message ahead of the request. A hook that changes the tools in the middle of a
run — ``prepare_next_turn`` returning another context, a tool hook editing ``context.tools`` in
place — is therefore declared to the very next request. ``prepare_request`` runs after the
declaration, so a change it makes is declared to the request after it (the loop already runs the
new tools; only the model learns of them one request later), as in pi.

The request itself carries the declarations in its messages; ``request_tools`` says what goes
beside them in ``Context.tools`` (nothing, unless a conversion dropped the system messages).

When the messages about to be sent already hold a system message (a prompt that patches the
system prompt), the changes are carried by the last of them instead of a second message; a
given system message whose tools need no change is passed on as the very object it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..ai.system_message import current_tools, system_message_patch
from ..ai.types import Message, SystemMessage, Tool
from .types import AgentContext, AgentMessage

__all__ = ["declare_tool_changes", "request_tools", "tool_declaration"]


def tool_declaration(tool: Tool) -> Tool:
    """A tool as the transcript declares it (pi's ``toToolDeclaration``): no implementation."""
    if type(tool) is Tool:
        return tool
    return Tool.model_construct(**{name: getattr(tool, name) for name in Tool.model_fields})


def declare_tool_changes(
    context: AgentContext, pending: Sequence[AgentMessage]
) -> list[AgentMessage]:
    """``pending`` (the messages about to be added before a request) with the difference
    between ``context.tools`` and the tools the transcript declares made explicit: on the last
    system message of ``pending``, or on a new one before the first other message. Unchanged
    (the same list of the same objects) when the declarations already match."""
    messages = list(pending)
    at = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], SystemMessage)),
        -1,
    )
    given = messages[at] if at >= 0 else None
    baseline = list(messages)
    if isinstance(given, SystemMessage) and (given.tools_added or given.tools_removed):
        # its tool fields are the caller's intent: the declaration is computed afresh
        baseline[at] = given.model_copy(update={"tools_added": None, "tools_removed": None})
    declared = [tool_declaration(tool) for tool in context.tools]
    patch = system_message_patch([*context.messages, *baseline], tools=declared)
    if isinstance(given, SystemMessage):
        if patch is None:
            return baseline  # the given message itself when it declared nothing
        baseline[at] = given.model_copy(
            update={"tools_added": patch.tools_added, "tools_removed": patch.tools_removed}
        )
        return baseline
    if patch is None:
        return messages
    first_other = next(
        (i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages)
    )
    messages.insert(first_other, patch)
    return messages


def request_tools(context: AgentContext, messages: Sequence[Message]) -> list[Tool]:
    """The tools to hand a request beside ``messages`` (its converted transcript): none when
    its system messages declare them, as in pi 1.6 (after a ``prepare_request`` that changed
    ``context.tools`` they still declare the previous list: the new one is declared to the next
    request); the transcript's declared tools when the conversion dropped every system message
    (a 0.79-era ``convert_to_llm``), so the model still gets them."""
    if any(message.role == "system" for message in messages):
        return []
    return current_tools(context.messages)
