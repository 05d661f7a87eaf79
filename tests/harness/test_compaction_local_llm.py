"""Compaction at a 4k window on the real llama.cpp server (SmolLM2, one thread): a session
over the line is compacted before the next prompt by the model itself, the summary request
fits its window, and the context after one compaction is under the line. Structure only: the
summary's wording is the small model's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pi_notebook.ai import AssistantMessage, Model, TextContent, Usage, UserMessage, local
from pi_notebook.harness import AgentHarness, InMemorySessionStorage, Session
from pi_notebook.harness.entries import CompactionEntry
from pi_notebook.harness.tokens import estimate_tokens
from pi_notebook.notebook.room import compaction_for

pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(540)]
WINDOW = 4096


@pytest.fixture(scope="module")
def small_model(local_model: Model) -> Iterator[Model]:
    with local.LocalServer(local.cached_model_path(), n_ctx=WINDOW, threads=1) as server:
        yield server.model()


def _full_session(model: Model, turns: int = 10) -> Session:
    session = Session.create(InMemorySessionStorage())
    for i in range(turns):
        session.append_message(UserMessage(content=f"Note {i}: " + "the sales grew. " * 80))
        session.append_message(
            AssistantMessage(
                content=[TextContent(text=f"Noted {i}. " + "Sales are up. " * 60)],
                api=model.api,
                provider=model.provider,
                model=model.id,
                usage=Usage(input=300 * (i + 1), output=120, total_tokens=300 * (i + 1) + 120),
                stop_reason="stop",
            )
        )
    return session


async def test_a_4k_session_is_compacted_under_the_line_by_the_model_itself(
    small_model: Model,
) -> None:
    session = _full_session(small_model)
    settings = compaction_for(small_model, overhead=100)
    threshold = WINDOW - settings.reserve_tokens
    harness = AgentHarness(session, small_model, compaction=settings)
    events: list[str] = []
    harness.subscribe(lambda event: events.append(event.type))
    await harness.prompt("Say OK.")
    assert "compaction_start" in events and "compaction_end" in events, events
    compactions = [e for e in session.get_branch() if isinstance(e, CompactionEntry)]
    assert len(compactions) == 1 and compactions[0].summary.strip()
    after = sum(estimate_tokens(m) for m in session.build_context().messages)
    assert after < threshold, (after, threshold)
    reply = session.build_context().messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.stop_reason in ("stop", "length"), reply.error_message
