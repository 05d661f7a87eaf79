"""The texts the harness sends to models: its default system prompt, pi's summarisation prompts
(compaction, split-turn prefix, branch summary) and the skill-listing preamble, verbatim.

Only the summariser's system prompt differs between pi's two implementations: the harness reads
"a conversation between a user and an AI assistant", pi-coding-agent "… an AI coding assistant"
(:data:`CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT`). The builders below assemble the user message
of each summarisation request exactly as pi does.
"""

from __future__ import annotations

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT",
    "DEFAULT_SYSTEM_PROMPT",
    "NO_PRIOR_HISTORY",
    "SKILLS_PREAMBLE",
    "SPLIT_TURN_SEPARATOR",
    "SUMMARIZATION_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
    "branch_summary_prompt",
    "history_summary_prompt",
    "turn_prefix_summary_prompt",
]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
"""The system prompt of a harness created without one."""


def _summarizer(assistant: str) -> str:
    return (
        "You are a context summarization assistant. Your task is to read a conversation between "
        f"a user and an {assistant}, then produce a structured summary following the exact "
        "format specified.\n\n"
        "Do NOT continue the conversation. Do NOT respond to any questions in the conversation. "
        "ONLY output the structured summary."
    )


SUMMARIZATION_SYSTEM_PROMPT = _summarizer("AI assistant")
"""System prompt of every summarisation request (pi's harness wording)."""

CODING_AGENT_SUMMARIZATION_SYSTEM_PROMPT = _summarizer("AI coding assistant")
"""pi-coding-agent's wording of the same system prompt."""

SUMMARIZATION_PROMPT = """\
The messages above are a conversation to summarize. Create a structured context checkpoint \
summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different \
tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""
"""Instructions of a first compaction."""

UPDATE_SUMMARIZATION_PROMPT = """\
The messages above are NEW conversation messages to incorporate into the existing summary \
provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""
"""Instructions of a compaction that updates the previous compaction's summary."""

TURN_PREFIX_SUMMARIZATION_PROMPT = """\
This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""
"""Instructions for the start of a turn the compaction cut through (split turn)."""

NO_PRIOR_HISTORY = "No prior history."
"""The history summary of a split turn that has nothing before it."""

SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
"""Joins the history summary and the turn-prefix summary of a split turn."""

BRANCH_SUMMARY_PROMPT = """\
Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages."""
"""Instructions for summarising a branch the user navigated away from."""

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\n"
    "Summary of that exploration:\n\n"
)
"""Put before the model's text in every generated branch summary."""

SKILLS_PREAMBLE = (
    "The following skills provide specialized instructions for specific tasks.\n"
    "Read the full skill file when the task matches its description.\n"
    "When a skill file references a relative path, resolve it against the skill directory "
    "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands."
)
"""The instruction lines above the ``<available_skills>`` listing."""


def _conversation(text: str) -> str:
    return f"<conversation>\n{text}\n</conversation>\n\n"


def _with_focus(instructions: str, custom_instructions: str | None) -> str:
    if custom_instructions:
        return f"{instructions}\n\nAdditional focus: {custom_instructions}"
    return instructions


def history_summary_prompt(
    conversation: str,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
) -> str:
    """The user message of a compaction: the serialised conversation, the previous summary
    (then the update instructions are used) and the instructions with any extra focus."""
    prompt = _conversation(conversation)
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    base = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    return prompt + _with_focus(base, custom_instructions)


def turn_prefix_summary_prompt(conversation: str) -> str:
    """The user message summarising the kept turn's beginning (split turn)."""
    return _conversation(conversation) + TURN_PREFIX_SUMMARIZATION_PROMPT


def branch_summary_prompt(
    conversation: str,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> str:
    """The user message of a branch summary. ``custom_instructions`` add a focus, or, with
    ``replace_instructions``, take the place of pi's instructions."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    else:
        instructions = _with_focus(BRANCH_SUMMARY_PROMPT, custom_instructions)
    return _conversation(conversation) + instructions
