"""The gate every tool call of the notebook agent passes (the harness's ``tool_call`` hook): a call
repeated too often in one run is refused (:mod:`.repeat_guard`), the approval policy
(``%approve``, ``PI_NOTEBOOK_APPROVE``) allows or denies by tool, and a tool that needs approval
waits for Allow / Deny in the run view; the notebook's write tools show what they would change."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .approval_policy import APPROVE_ENV, POLICY_ENTRY, ApprovalPolicy, Decision

if TYPE_CHECKING:
    from ..harness.hooks import ToolCallEvent, ToolCallResult
    from .kernel_agent import NotebookAgent

__all__ = ["ToolGate"]


class ToolGate:
    """Decides each tool call of ``agent``'s runs, and keeps the session's approval policy."""

    def __init__(self, agent: NotebookAgent) -> None:
        self._agent = agent
        self._approval: ApprovalPolicy | None = None

    def forget(self) -> None:
        """Read the policy again from the session (another session was opened)."""
        self._approval = None

    async def on_tool_call(self, event: ToolCallEvent) -> ToolCallResult | None:
        """The ``tool_call`` hook: a call repeated too often in one run is refused (see
        :mod:`.repeat_guard`); tools marked ``requires_approval`` wait for Allow / Deny in the
        run view (denied after ``approval_timeout`` seconds without an answer)."""
        from ..harness.hooks import ToolCallResult
        from .answer_check import CODE_TOOLS
        from .workspace.edit_tools import WRITE_TOOL_NAMES

        agent = self._agent
        name, run, harness = event.tool_name, agent.active_run, agent.harness_if_made
        verdict = agent.repeat_guard.check(name, dict(event.input), event.tool_call_id)
        if verdict.reason is not None:
            if verdict.stop and harness is not None:
                if run is not None:
                    run.view.note_stopped(f"Stopped: {verdict.reason}")
                harness.abort()
            elif verdict.answer_due and name in CODE_TOOLS:
                agent.runner.withhold_tools()
            return ToolCallResult(block=True, reason=verdict.reason)
        decision = self.policy.decide(name)
        if decision == "deny":
            if run is not None:
                run.view.note_policy(event.tool_call_id, name, event.input, allowed=False)
            return ToolCallResult(
                block=True,
                reason=f"{name} was not run: the notebook's approval policy denies it "
                f"(%approve {name} deny). Do without it, or tell the user what you need.",
            )
        if name in WRITE_TOOL_NAMES:
            return await self._approve_write(event, by_policy=decision == "allow")
        made = next((t for t in agent.tool_offer.active_tools() if t.name == name), None)
        if not getattr(made, "requires_approval", False):
            return None
        if decision == "allow":
            if run is not None:
                run.view.note_policy(event.tool_call_id, name, event.input, allowed=True)
            return None
        if run is None:
            return ToolCallResult(block=True, reason=f"{name} needs approval, but no run is shown")
        allowed = await run.view.request_approval(
            event.tool_call_id, name, event.input, timeout=agent.approval_timeout
        )
        if allowed is None:
            reason = f"Nobody approved {name} within {agent.approval_timeout:.0f} s"
            return ToolCallResult(block=True, reason=reason)
        if not allowed:
            return ToolCallResult(block=True, reason=f"The user denied {name}")
        return None

    async def _approve_write(
        self, event: ToolCallEvent, *, by_policy: bool = False
    ) -> ToolCallResult | None:
        """A notebook write tool: the card shows what it would do (the cell's source, a diff);
        "always allow" is remembered for the session. Several cell changes of one reply are
        decided together on one review card (:mod:`.workspace.review`). Without a frontend
        nothing is written, so nothing is asked (the tool says what it would have done).
        ``by_policy``: allowed by ``%approve``, so nothing is asked either."""
        from ..harness.hooks import ToolCallResult
        from .workspace.document import DocumentError, NotebookNotConnected

        agent = self._agent
        name, tools = event.tool_name, agent.write_tools
        decided = agent.reply_changes.take(event.tool_call_id)
        unchanged = await tools.unchanged(name, dict(event.input))
        if unchanged is not None:  # nothing to ask about, whatever the policy
            return ToolCallResult(block=True, reason=unchanged)
        if not tools.needs_approval(name):
            return None
        run = agent.active_run
        if by_policy:
            if run is not None:
                run.view.note_policy(event.tool_call_id, name, event.input, allowed=True)
            tools.approve(event.tool_call_id)
            return None
        if run is None:
            return ToolCallResult(block=True, reason=f"{name} needs approval, but no run is shown")
        if decided is None:
            decided = await agent.reply_changes.review(
                event.tool_call_id, tools, run.view.request_review, agent.approval_timeout
            )
        if decided is not None:
            if not decided.accepted:
                return ToolCallResult(block=True, reason=decided.words)
            tools.approve(event.tool_call_id, decided.words)
            return None
        try:
            preview = await tools.preview(name, dict(event.input))
        except (DocumentError, NotebookNotConnected) as exc:
            return ToolCallResult(block=True, reason=f"{exc} Nothing was changed.")
        allowed = await run.view.request_approval(
            event.tool_call_id,
            name,
            event.input,
            timeout=agent.approval_timeout,
            preview=preview,
        )
        if allowed is None:
            reason = f"Nobody approved {name} within {agent.approval_timeout:.0f} s"
            return ToolCallResult(block=True, reason=f"{reason}; the notebook is unchanged.")
        if not allowed:
            return ToolCallResult(
                block=True, reason=f"The user denied {name}; the notebook is unchanged."
            )
        if run.view.answered_always(event.tool_call_id):
            tools.allow_always(name)
        tools.approve(event.tool_call_id)
        return None

    @property
    def policy(self) -> ApprovalPolicy:
        """The policy recorded last in the session, with ``PI_NOTEBOOK_APPROVE`` applied over
        it (and recorded, when it changes something)."""
        if self._approval is None:
            recorded = ApprovalPolicy()
            for entry in self._agent.session.entries_of("custom"):
                if getattr(entry, "custom_type", None) == POLICY_ENTRY:
                    recorded = ApprovalPolicy.from_data(getattr(entry, "data", None)) or recorded
            self._approval = recorded
            configured = os.environ.get(APPROVE_ENV, "").strip()
            if configured:
                try:
                    wanted = recorded.merged(ApprovalPolicy.parse(configured))
                except ValueError as exc:
                    print(f"pi_notebook: {exc}; the approval policy is unchanged")
                else:
                    if wanted.rules != recorded.rules:
                        self._record(wanted)
        return self._approval

    def set(self, target: str, decision: Decision) -> ApprovalPolicy:
        """``%approve TARGET DECISION``: change the policy and record it in the session."""
        policy = ApprovalPolicy(self.policy.rules)
        policy.set(target, decision)
        self._record(policy)
        return policy

    def _record(self, policy: ApprovalPolicy) -> None:
        self._agent.session.append_custom(POLICY_ENTRY, policy.to_data())
        self._approval = policy
