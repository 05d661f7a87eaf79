"""The summary of a run: a Markdown table (systems side by side, with pi_notebook ÷ the minimal
baseline) and the JSON of every result."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from statistics import fmean
from typing import Any

from .run import TaskResult
from .tasks import LEVELS
from .transcript import CATEGORIES

__all__ = ["markdown_table", "summarise", "write_report"]


def summarise(results: Sequence[TaskResult]) -> dict[str, dict[str, Any]]:
    """Per system: accuracy (overall and by level), means per task, failures by category."""
    summary: dict[str, dict[str, Any]] = {}
    for system in dict.fromkeys(r.system for r in results):
        rows = [r for r in results if r.system == system]
        by_level = {
            level: (
                sum(r.right for r in rows if r.level == level),
                sum(r.level == level for r in rows),
            )
            for level in LEVELS
        }
        summary[system] = {
            "tasks": len(rows),
            "right": sum(r.right for r in rows),
            "accuracy": sum(r.right for r in rows) / len(rows),
            "by_level": {k: {"right": a, "tasks": b} for k, (a, b) in by_level.items()},
            "mean_turns": fmean(r.turns for r in rows),
            "mean_tool_calls": fmean(r.tool_calls for r in rows),
            "mean_tool_errors": fmean(r.tool_errors for r in rows),
            "mean_tokens_in": fmean(r.tokens_in for r in rows),
            "mean_tokens_out": fmean(r.tokens_out for r in rows),
            "total_cost": sum(r.cost for r in rows),
            "mean_seconds": fmean(r.seconds for r in rows),
            "invented_data": sum(r.invented_data for r in rows),
            "answered": sum(r.answered for r in rows),
            "ran_code": sum(bool(r.code) for r in rows),
            "failures": dict(Counter(r.category for r in rows if r.category)),
        }
    return summary


def _pct(right: int, tasks: int) -> str:
    return f"{right}/{tasks} ({100 * right / tasks:.0f}%)" if tasks else "–"


def markdown_table(summary: dict[str, dict[str, Any]]) -> str:
    """Systems as columns; the last column is pi_notebook ÷ minimal where both ran."""
    systems = list(summary)
    ratio = "pi_notebook" in summary and "minimal" in summary
    head = ["", *systems] + (["pi_notebook ÷ minimal"] if ratio else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def row(label: str, cells: list[str], quotient: str = "") -> None:
        lines.append("| " + " | ".join([label, *cells] + ([quotient] if ratio else [])) + " |")

    def divide(key: str, fmt: str = "{:.2f}") -> str:
        if not ratio:
            return ""
        mine, theirs = summary["pi_notebook"][key], summary["minimal"][key]
        return fmt.format(mine / theirs) if theirs else "–"

    row("accuracy", [_pct(s["right"], s["tasks"]) for s in summary.values()], divide("accuracy"))
    for level in LEVELS:
        counts = [s["by_level"][level] for s in summary.values()]
        row(f"  {level}", [_pct(c["right"], c["tasks"]) for c in counts])
    for key, label in (
        ("mean_turns", "mean turns"),
        ("mean_tool_calls", "mean tool calls"),
        ("mean_tool_errors", "mean tool errors"),
        ("mean_tokens_in", "mean tokens in"),
        ("mean_tokens_out", "mean tokens out"),
        ("mean_seconds", "mean seconds"),
    ):
        row(label, [f"{s[key]:.1f}" for s in summary.values()], divide(key))
    row("answered in the format", [_pct(s["answered"], s["tasks"]) for s in summary.values()])
    row("ran code", [_pct(s["ran_code"], s["tasks"]) for s in summary.values()])
    row("cost (total, $)", [f"{s['total_cost']:.4f}" for s in summary.values()])
    row("tasks inventing data", [str(s["invented_data"]) for s in summary.values()])
    for category in CATEGORIES:
        row(f"failure: {category}", [str(s["failures"].get(category, 0)) for s in summary.values()])
    return "\n".join(lines) + "\n"


def write_report(
    results: Sequence[TaskResult], out: Path, meta: dict[str, Any]
) -> tuple[Path, Path]:
    """``out/results.json`` (meta, summary, every result) and ``out/report.md``."""
    summary = summarise(results)
    data = {"meta": meta, "summary": summary, "results": [asdict(r) for r in results]}
    as_json = out / "results.json"
    as_json.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    header = "\n".join(f"- {k}: {v}" for k, v in meta.items())
    as_md = out / "report.md"
    as_md.write_text(f"{header}\n\n{markdown_table(summary)}", encoding="utf-8")
    return as_json, as_md
