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

The loop asks before every request, so the replay is kept by :class:`ToolDeclarations` and
carried forward over the messages appended since the last request: replaying the whole
transcript each time would be whole-history work per turn (``bench/tool_declarations_bench``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..ai.types import Message, SystemMessage, Tool, ToolReference
from .types import AgentContext, AgentMessage

__all__ = ["ToolDeclarations", "declare_tool_changes", "request_tools", "tool_declaration"]


def tool_declaration(tool: Tool) -> Tool:
    """A tool as the transcript declares it (pi's ``toToolDeclaration``): no implementation."""
    if type(tool) is Tool:
        return tool
    return Tool.model_construct(**{name: getattr(tool, name) for name in Tool.model_fields})


def _same(declared: Tool | None, tool: Tool) -> bool:
    """Whether ``declared`` already tells the model what ``tool`` is (pi compares the JSON of
    the declarations: name, description, parameters)."""
    return declared is not None and (
        declared is tool
        or (
            declared.name == tool.name
            and declared.description == tool.description
            and declared.parameters == tool.parameters
        )
    )


def _replay(tools: dict[str, Tool], messages: Iterable[object]) -> None:
    """Apply the tool fields of the system messages among ``messages`` to ``tools``: removals
    before additions, a name declared again keeps its place (pi's ``getCurrentTools``)."""
    for message in messages:
        if isinstance(message, SystemMessage):
            for ref in message.tools_removed or ():
                tools.pop(ref.name, None)
            for tool in message.tools_added or ():
                tools[tool.name] = tool


class ToolDeclarations:
    """The tools a run's transcript declares, carried forward as the transcript grows.

    The loop's working transcript only grows between replacements, so the replay goes on from
    the messages seen last time; another list (a hook handed the loop another context) or a
    shorter one starts it over.
    """

    __slots__ = ("_count", "_messages", "_tools")

    def __init__(self) -> None:
        self._messages: Sequence[object] | None = None
        self._count = 0
        self._tools: dict[str, Tool] = {}

    def declared(self, messages: Sequence[object]) -> dict[str, Tool]:
        """Name → declaration, as the system messages of ``messages`` replay (do not modify)."""
        if messages is not self._messages or self._count > len(messages):
            self._messages, self._count, self._tools = messages, 0, {}
        if self._count < len(messages):
            _replay(self._tools, messages[self._count :])
            self._count = len(messages)
        return self._tools

    def declare(self, context: AgentContext, pending: Sequence[AgentMessage]) -> list[AgentMessage]:
        """``pending`` (the messages about to be added before a request) with the difference
        between ``context.tools`` and the tools the transcript declares made explicit: on the
        last system message of ``pending``, or on a new one before the first other message.
        Unchanged (the same list of the same objects) when the declarations already match."""
        messages = list(pending)
        declared = self.declared(context.messages)
        if not messages and self._matches(declared, context.tools):
            return messages  # most requests: nothing new, nothing changed (no lists built)
        at = next(
            (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], SystemMessage)),
            -1,
        )
        given = messages[at] if at >= 0 else None
        baseline = messages
        if isinstance(given, SystemMessage):
            baseline = list(messages)
            if given.tools_added or given.tools_removed:
                # its tool fields are the caller's intent: the declaration is computed afresh
                baseline[at] = given.model_copy(update={"tools_added": None, "tools_removed": None})
            declared = dict(declared)
            _replay(declared, baseline)
        runnable = {tool.name: tool for tool in context.tools}
        added = [
            tool_declaration(tool)
            for tool in context.tools
            if not _same(declared.get(tool.name), tool)
        ]
        removed = [
            ToolReference(name=name)
            for name, tool in declared.items()
            if name not in runnable or not _same(tool, runnable[name])
        ]
        if isinstance(given, SystemMessage):
            if added or removed:
                baseline[at] = given.model_copy(
                    update={"tools_added": added or None, "tools_removed": removed or None}
                )
            return baseline  # the given message itself when it declared nothing
        if not (added or removed):
            return messages
        patch = SystemMessage(content="", tools_added=added or None, tools_removed=removed or None)
        first_other = next(
            (i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)), len(messages)
        )
        messages.insert(first_other, patch)
        return messages

    @staticmethod
    def _matches(declared: dict[str, Tool], tools: Sequence[Tool]) -> bool:
        """Whether ``declared`` is exactly ``tools``: the same names, each declared as it is
        (``declare`` would then add and remove nothing). Equal sizes and every tool found under
        its own name mean the same names, unless two tools share one: then not all of
        ``declared``'s names are covered, which ``declare`` reports, so that case says no."""
        if len(declared) != len(tools):
            return False
        seen: set[str] = set()
        for tool in tools:
            name = tool.name
            if name in seen or not _same(declared.get(name), tool):
                return False
            seen.add(name)
        return True

    def request_tools(self, context: AgentContext, messages: Sequence[Message]) -> list[Tool]:
        """The tools to hand a request beside ``messages`` (its converted transcript): none
        when its system messages declare them, as in pi 1.6 (after a ``prepare_request`` that
        changed ``context.tools`` they still declare the previous list: the new one is declared
        to the next request); the transcript's declared tools when the conversion dropped every
        system message (a 0.79-era ``convert_to_llm``), so the model still gets them."""
        for message in messages:  # a loop, not any(): no generator per request
            if message.role == "system":
                return []
        return list(self.declared(context.messages).values())


def declare_tool_changes(
    context: AgentContext, pending: Sequence[AgentMessage]
) -> list[AgentMessage]:
    """:meth:`ToolDeclarations.declare` over a transcript seen for the first time."""
    return ToolDeclarations().declare(context, pending)


def request_tools(context: AgentContext, messages: Sequence[Message]) -> list[Tool]:
    """:meth:`ToolDeclarations.request_tools` over a transcript seen for the first time."""
    return ToolDeclarations().request_tools(context, messages)
