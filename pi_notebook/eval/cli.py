"""The command line of the evaluation harness."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from .models import replay_spec, save_served, serve_model
from .pi_system import PI_ENV, PI_SETUP
from .report import markdown_table, summarise, write_report
from .run import SYSTEMS, rescore, run_eval
from .tasks import Task, TaskFormatError, load_tasks

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pi_notebook.eval",
        description="Run data-analysis tasks through pi_notebook (and two baselines) and score "
        "the answers.",
    )
    parser.add_argument("tasks", type=Path, help="the task file (JSONL)")
    parser.add_argument(
        "--model",
        help="PROVIDER/ID as %%model takes it; 'local' serves the embedded SmolLM2",
    )
    parser.add_argument("--workers", type=int, default=1, help="tasks run in parallel (default 1)")
    parser.add_argument("--out", type=Path, help="where results and session files go")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated, from {', '.join(SYSTEMS)} (default: all three)",
    )
    parser.add_argument("--ids", help="comma-separated task ids to run (default: all)")
    parser.add_argument(
        "--time-limit", type=float, default=300.0, help="seconds per task and system (300)"
    )
    parser.add_argument(
        "--stop-after",
        type=float,
        metavar="MINUTES",
        help="start no new task after this long; report the tasks every system finished",
    )
    parser.add_argument("--gguf", type=Path, help="serve this GGUF file with llama.cpp")
    parser.add_argument("--chat-template", type=Path, help="a Jinja chat template for --gguf")
    parser.add_argument("--n-ctx", type=int, help="context window of a served model")
    parser.add_argument("--threads", type=int, default=1, help="threads of a served model (1)")
    parser.add_argument(
        "--rescore",
        type=Path,
        metavar="DIR",
        help="score the finished run in DIR again (current scorer and categories); no model",
    )
    cassettes = parser.add_mutually_exclusive_group()
    cassettes.add_argument(
        "--record", type=Path, metavar="DIR", help="record pi_notebook's model replies here"
    )
    cassettes.add_argument(
        "--replay", type=Path, metavar="DIR", help="replay pi_notebook's replies from here"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        parser.error(f"--systems: choose from {', '.join(SYSTEMS)}")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.time_limit <= 0:
        parser.error("--time-limit must be positive")
    if (args.record or args.replay) and systems != ["pi_notebook"]:
        parser.error("--record/--replay apply to pi_notebook only: add --systems pi_notebook")
    try:
        ids = [i.strip() for i in args.ids.split(",")] if args.ids else None
        tasks = load_tasks(args.tasks, ids=ids)
    except TaskFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.rescore is not None:
        return _rescore(tasks, args.rescore)
    if not args.model:
        parser.error("--model is required (except with --rescore)")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out: Path = args.out or Path("eval-runs") / stamp
    if args.replay is not None:
        spec, server = replay_spec(args.model, args.replay), None
    else:
        spec, server = serve_model(
            args.model,
            gguf=args.gguf,
            chat_template=args.chat_template,
            n_ctx=args.n_ctx,
            threads=args.threads,
        )
    if args.record is not None:
        save_served(spec, args.record)
    started = time.monotonic()
    try:
        results = run_eval(
            tasks,
            spec,
            out.resolve(),
            systems=systems,
            workers=args.workers,
            time_limit=args.time_limit,
            cassettes=(args.record or args.replay),
            mode="record" if args.record else "replay" if args.replay else None,
            stop_after=None if args.stop_after is None else args.stop_after * 60,
        )
    finally:
        if server is not None:
            server.stop()
    meta = {
        "tasks": str(args.tasks),
        "model": args.model,
        "systems": ", ".join(systems),
        "task count": f"{len({r.task_id for r in results})} of {len(tasks)}",
        "time limit (s)": args.time_limit,
        "workers": args.workers,
        "pi_notebook setup": PI_SETUP.replace("\n", "; ")
        + "; "
        + ", ".join(f"{k}={v}" for k, v in PI_ENV.items()),
        "started": stamp,
        "wall seconds": round(time.monotonic() - started),
    }
    as_json, as_md = write_report(results, out, meta)
    print(markdown_table(summarise(results)))
    print(f"results: {as_json}\ntable: {as_md}")
    return 0


def _rescore(tasks: list[Task], out: Path) -> int:
    if not (out / "results.jsonl").is_file():
        print(f"error: no results.jsonl in {out}", file=sys.stderr)
        return 2
    results = rescore(tasks, out)
    meta: dict[str, object] = {}
    previous = out / "results.json"
    if previous.is_file():
        meta = json.loads(previous.read_text(encoding="utf-8")).get("meta", {})
    meta["task count"] = f"{len({r.task_id for r in results})} of {len(tasks)}"
    meta["rescored"] = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    as_json, as_md = write_report(results, out, meta)
    print(markdown_table(summarise(results)))
    print(f"results: {as_json}\ntable: {as_md}")
    return 0
