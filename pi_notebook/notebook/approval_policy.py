"""The approval policy: per tool, ``allow`` (run without asking), ``ask`` (the run view's
Allow / Deny card, the default) or ``deny`` (refused, the model is told why).

Set with ``%approve TOOL|all allow|ask|deny`` or, for executed notebooks and the evaluation
harness where nobody could click, with ``PI_NOTEBOOK_APPROVE`` in the kernel's environment:
``run_python=allow`` (rules separated by commas; a bare ``allow`` means ``all=allow``). Each change
is recorded in the session as a custom entry, so a reopened notebook keeps its policy; the
environment variable, when set, is applied over the recorded policy when the kernel starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias

__all__ = ["APPROVE_ENV", "DECISIONS", "POLICY_ENTRY", "ApprovalPolicy", "Decision"]

Decision: TypeAlias = Literal["allow", "ask", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")
APPROVE_ENV = "PI_NOTEBOOK_APPROVE"
POLICY_ENTRY = "pi_notebook.approval_policy"
"""The session's custom entry type; its data is ``{"rules": {tool or "all": decision}}``."""
ALL = "all"


def _decision(text: str) -> Decision:
    word = text.strip().lower()
    if word not in DECISIONS:
        raise ValueError(f"{text!r} is not one of {', '.join(DECISIONS)}")
    return word


class ApprovalPolicy:
    """Decisions by tool name; ``all`` covers every tool without a rule of its own."""

    def __init__(self, rules: Mapping[str, Decision] | None = None) -> None:
        self.rules: dict[str, Decision] = dict(rules or {})

    def decide(self, tool_name: str) -> Decision:
        return self.rules.get(tool_name, self.rules.get(ALL, "ask"))

    def set(self, target: str, decision: Decision) -> None:
        """One tool's decision, or ``all``: every tool's (the rules of single tools go)."""
        if target == ALL:
            self.rules = {ALL: decision}
        else:
            self.rules[target] = decision

    def describe(self) -> str:
        """What ``%approve`` prints."""
        default = self.rules.get(ALL, "ask")
        lines = [f"all tools: {default}"]
        lines += [f"{name}: {d}" for name, d in sorted(self.rules.items()) if name != ALL]
        return "\n".join(lines)

    def to_data(self) -> dict[str, dict[str, str]]:
        return {"rules": dict(self.rules)}

    @classmethod
    def from_data(cls, data: object) -> ApprovalPolicy | None:
        """The policy a session entry recorded (None for data it cannot read)."""
        rules = data.get("rules") if isinstance(data, dict) else None
        if not isinstance(rules, dict):
            return None
        try:
            return cls({str(k): _decision(str(v)) for k, v in rules.items()})
        except ValueError:
            return None

    @classmethod
    def parse(cls, text: str) -> ApprovalPolicy:
        """``PI_NOTEBOOK_APPROVE``'s value: ``TOOL=DECISION`` rules separated by commas or
        spaces, a bare decision meaning ``all``. Raises ``ValueError`` naming the bad rule."""
        policy = cls()
        for rule in text.replace(",", " ").split():
            target, sep, decision = rule.partition("=")
            if not sep:
                target, decision = ALL, rule
            if not target.strip():
                raise ValueError(f"{APPROVE_ENV}: a rule without a tool name: {rule!r}")
            try:
                policy.set(target.strip(), _decision(decision))
            except ValueError as exc:
                raise ValueError(f"{APPROVE_ENV}: {exc} (in {rule!r})") from None
        return policy

    def merged(self, other: ApprovalPolicy) -> ApprovalPolicy:
        """This policy with ``other``'s rules applied over it."""
        result = ApprovalPolicy(self.rules)
        if ALL in other.rules:
            result.set(ALL, other.rules[ALL])
        for name, decision in other.rules.items():
            if name != ALL:
                result.set(name, decision)
        return result
