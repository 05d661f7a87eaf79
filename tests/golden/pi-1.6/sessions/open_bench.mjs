// Open a session file with the real pi 1.6.0 SessionManager and build its context, timing both
// (for bench/session_bench.py, which runs this with the Node 22 of node_modules/.bin/node).
//
//   node_modules/.bin/node open_bench.mjs FILE [--reps N]
//
// Prints one JSON line: {"peer", "version", "node", "entries", "context_messages",
// "open_ms": [...], "build_ms": [...], "total_ms": [...], "heap_bytes"} (one number per
// repetition, after one warm-up). heap_bytes: what an opened session holds on the V8 heap (heap
// used after a full collection, with the manager alive, less the same before it was opened);
// measured only when node runs with --expose-gc.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";

const file = resolve(process.argv[2]);
const repsAt = process.argv.indexOf("--reps");
const reps = repsAt > 0 ? Number.parseInt(process.argv[repsAt + 1], 10) : 3;

function once() {
	const start = performance.now();
	const manager = SessionManager.open(file);
	const opened = performance.now();
	const context = manager.buildSessionContext();
	const built = performance.now();
	return { open: opened - start, build: built - opened, entries: manager.getEntryCount(), messages: context.messages.length };
}

once();
const open = [];
const build = [];
let last;
for (let i = 0; i < reps; i++) {
	globalThis.gc?.();
	last = once();
	open.push(last.open);
	build.push(last.build);
}
let heap = null;
if (globalThis.gc) {
	globalThis.gc();
	const before = process.memoryUsage().heapUsed;
	const held = SessionManager.open(file);
	globalThis.gc();
	heap = process.memoryUsage().heapUsed - before;
	if (held.getEntryCount() < 0) console.log(""); // keeps the manager alive until here
}
const pkg = JSON.parse(readFileSync(new URL("./node_modules/@earendil-works/pi-coding-agent/package.json", import.meta.url)));
console.log(
	JSON.stringify({
		peer: "pi-coding-agent",
		version: pkg.version,
		node: process.version,
		entries: last.entries,
		context_messages: last.messages,
		open_ms: open,
		build_ms: build,
		total_ms: open.map((ms, i) => ms + build[i]),
		heap_bytes: heap,
	}),
);
