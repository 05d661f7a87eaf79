// Open a session JSONL file with the real pi-coding-agent SessionManager (pinned in package.json)
// and build its context, timing both. For bench/session_bench.py; prints one JSON line.
//
//   node session_manager.mjs FILE [--reps N] [--warmup N]
//
// Each repetition times `SessionManager.open(FILE)` (read + parse + index) and then
// `buildSessionContext()` (walk from the leaf to the root, resolve compactions). The file must be
// a current (v3) session: pi rewrites older or empty files in place when it opens them.
// Output: {"peer", "version", "node", "file", "bytes", "entries", "context_messages",
//          "open_ms": [...], "build_ms": [...], "total_ms": [...]}   (one number per repetition)

import { SessionManager } from "@mariozechner/pi-coding-agent";
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";

const USAGE = "usage: node session_manager.mjs FILE [--reps N] [--warmup N]";

function parseArgs(argv) {
	const options = { file: undefined, reps: 5, warmup: 1 };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		if (arg === "--reps" || arg === "--warmup") {
			const value = Number.parseInt(argv[++i], 10);
			if (!(Number.isInteger(value) && value >= 0)) {
				throw new Error(`${arg} needs a non-negative integer\n${USAGE}`);
			}
			options[arg.slice(2)] = value;
		} else if (!arg.startsWith("--") && options.file === undefined) {
			options.file = resolve(arg);
		} else {
			throw new Error(`unexpected argument ${arg}\n${USAGE}`);
		}
	}
	if (options.file === undefined) {
		throw new Error(USAGE);
	}
	if (options.reps < 1) {
		throw new Error(`--reps must be at least 1\n${USAGE}`);
	}
	return options;
}

function openAndBuild(file) {
	const start = performance.now();
	const manager = SessionManager.open(file);
	const opened = performance.now();
	const context = manager.buildSessionContext();
	const built = performance.now();
	return {
		openMs: opened - start,
		buildMs: built - opened,
		entries: manager.getEntries().length,
		contextMessages: context.messages.length,
	};
}

function main() {
	const options = parseArgs(process.argv.slice(2));
	const bytes = statSync(options.file).size;
	for (let i = 0; i < options.warmup; i++) {
		openAndBuild(options.file);
	}
	const open = [];
	const build = [];
	let last;
	for (let i = 0; i < options.reps; i++) {
		globalThis.gc?.();
		last = openAndBuild(options.file);
		open.push(last.openMs);
		build.push(last.buildMs);
	}
	const pkg = JSON.parse(
		readFileSync(new URL("./node_modules/@mariozechner/pi-coding-agent/package.json", import.meta.url)),
	);
	console.log(JSON.stringify({
		peer: "pi-coding-agent",
		version: pkg.version,
		node: process.version,
		file: options.file,
		bytes,
		entries: last.entries,
		context_messages: last.contextMessages,
		open_ms: open,
		build_ms: build,
		total_ms: open.map((ms, i) => ms + build[i]),
	}));
}

try {
	main();
} catch (error) {
	console.error(error instanceof Error ? error.message : String(error));
	process.exit(1);
}
