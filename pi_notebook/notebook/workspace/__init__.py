"""The notebook as the agent's workspace: what ran in the kernel (``history``), what changed
between turns (``summary``), the read tools, and (from the frontend side) the open document and
the tools that write to it."""

from __future__ import annotations

from .history import ErrorInfo, ExecutionHistory, ExecutionRecord, OutputSummary

__all__ = ["ErrorInfo", "ExecutionHistory", "ExecutionRecord", "OutputSummary"]
