"""Replay pi 1.6 system messages into the current system prompt and tool list.

pi 1.6 keeps the system prompt and tools in the transcript: each ``SystemMessage`` appends
instructions (``content``), patches named ``sections`` and adds or removes tools. The state at a
point is the replay of every system message before it (pi-ai ``getCurrentSystemMessage``):
contents are collected in order, a section set again keeps its place, ``None`` deletes it;
removals apply before additions, and redefining a tool keeps its position.

The providers of this package take the prompt and tools outside the message list, so
``collapse_system_messages`` folds them back into ``Context.system_prompt``/``Context.tools``
before a request (pi's ``collapseSystemMessages`` for APIs without mid-conversation system
messages). A model whose compat says its API takes them mid-conversation
(``supportsMidConvoSystemMessages``, Chat Completions) gets them in place instead
(``keep_system_messages``): the first renders as the whole prompt, a later one as the update it
makes (``render_system_message_update``), and the request declares every tool they add.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .types import Context, Message, SystemMessage, Tool, ToolReference

__all__ = [
    "collapse_system_messages",
    "current_system_message",
    "current_tools",
    "keep_system_messages",
    "render_system_message_update",
    "system_message_patch",
    "system_message_text",
]


def current_tools(messages: Iterable[object]) -> list[Tool]:
    """The tools declared after replaying every system message in order."""
    tools: dict[str, Tool] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        for ref in message.tools_removed or ():
            tools.pop(ref.name, None)
        for tool in message.tools_added or ():
            tools[tool.name] = tool
    return list(tools.values())


def current_system_message(messages: Iterable[object]) -> SystemMessage | None:
    """One system message holding the replayed state, or ``None`` when there is none at all."""
    contents: list[str] = []
    sections: dict[str, str] = {}
    timestamp: int | None = None
    tools: dict[str, Tool] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        if timestamp is None:
            timestamp = message.timestamp
        text = message.text
        if text:
            contents.append(text)
        for name, value in (message.sections or {}).items():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for ref in message.tools_removed or ():
            tools.pop(ref.name, None)
        for tool in message.tools_added or ():
            tools[tool.name] = tool
    if timestamp is None and not tools:
        return None
    return SystemMessage(
        content="\n\n".join(contents),
        sections=dict(sections) or None,
        tools_added=list(tools.values()) or None,
        timestamp=timestamp or 0,
    )


def system_message_text(message: SystemMessage) -> str:
    """The prompt a system message renders to: its content, then its section values."""
    parts = [message.text, *(v for v in (message.sections or {}).values() if v is not None)]
    return "\n\n".join(part for part in parts if part)


def collapse_system_messages(context: Context) -> Context:
    """``context`` with its system messages folded into ``system_prompt`` and ``tools``.

    A context without system messages is returned as it is (the 0.79-style path costs one scan).
    Otherwise ``system_prompt`` and ``tools`` count as a leading system message, as in pi.
    """
    if not any(isinstance(m, SystemMessage) for m in context.messages):
        return context
    replayed = current_system_message(_with_leading(context))
    prompt = system_message_text(replayed) if replayed is not None else ""
    tools = list(replayed.tools_added or ()) if replayed is not None else []
    return context.model_copy(
        update={
            "system_prompt": prompt or None,
            "tools": tools or None,
            "messages": [m for m in context.messages if not isinstance(m, SystemMessage)],
        }
    )


def _with_leading(context: Context) -> list[Message]:
    """The context's messages after a leading system message made of ``system_prompt`` and
    ``tools`` (none when both are empty), as pi counts them."""
    if not (context.system_prompt or context.tools):
        return list(context.messages)
    leading = SystemMessage(
        content=context.system_prompt or "",
        tools_added=list(context.tools) if context.tools else None,
        timestamp=0,
    )
    return [leading, *context.messages]


def render_system_message_update(message: SystemMessage) -> str:
    """A later system message as sent in mid-conversation: its content, then each section it
    sets or removes, named so the model can relate it to the leading prompt (pi's wording)."""
    parts = [message.text] if message.text else []
    for name, value in (message.sections or {}).items():
        if value is None:
            parts.append(f'Removed system prompt section "{name}".')
        else:
            parts.append(f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(parts)


def keep_system_messages(context: Context) -> Context:
    """``context`` for an API that takes system messages in mid-conversation: the system
    messages stay where they are (``system_prompt`` and ``tools`` become a leading one, as in
    :func:`collapse_system_messages`), and the request declares the tools of all of them (pi
    1.6 without mid-conversation tool additions). Without system messages: ``context`` as is."""
    if not any(isinstance(m, SystemMessage) for m in context.messages):
        return context
    messages = _with_leading(context)
    return context.model_copy(
        update={
            "system_prompt": None,
            "tools": current_tools(messages) or None,
            "messages": messages,
        }
    )


def _declaration(tool: Tool) -> dict[str, object]:
    return tool.to_json_dict()


def system_message_patch(
    messages: Iterable[object],
    sections: Mapping[str, str] | None = None,
    tools: Sequence[Tool] | None = None,
    *,
    timestamp: int | None = None,
) -> SystemMessage | None:
    """The system message that brings the replayed state of ``messages`` to ``sections`` and
    ``tools`` (``None``: leave that part as it is), or ``None`` when nothing changes.

    As pi writes them: changed or new sections with their text, dropped ones as ``None``; tools
    whose declaration changed are removed and added again, new ones added, gone ones removed.
    """
    state = current_system_message(messages)
    patch: dict[str, str | None] = {}
    if sections is not None:
        previous = dict(state.sections or {}) if state is not None else {}
        patch = {name: text for name, text in sections.items() if previous.get(name) != text}
        patch.update({name: None for name in previous if name not in sections})
    added: list[Tool] = []
    removed: list[ToolReference] = []
    if tools is not None:
        before = {t.name: t for t in ((state.tools_added if state else None) or ())}
        after = {t.name: t for t in tools}
        for name, tool in after.items():
            old = before.get(name)
            if old is None or _declaration(old) != _declaration(tool):
                added.append(tool)
        for name, old in before.items():
            new = after.get(name)
            if new is None or _declaration(old) != _declaration(new):
                removed.append(ToolReference(name=name))
    if not (patch or added or removed):
        return None
    return SystemMessage(
        content="",
        sections=patch or None,
        tools_added=added or None,
        tools_removed=removed or None,
        **({} if timestamp is None else {"timestamp": timestamp}),
    )
