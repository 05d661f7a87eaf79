// pi-ai's own streaming (openai-completions / anthropic-messages, over the official JS SDKs) read
// from bench/sse_server.py, for bench/stream_bench.py. Prints one JSON line with the timings.
// `--pi 0.73` (the default) runs @mariozechner/pi-ai 0.73.1, pinned in package.json here;
// `--pi 1.6` runs @earendil-works/pi-ai 1.6.0 from tests/golden/pi-1.6/sessions (`npm ci` there;
// run it with the Node 22 installed there).
//
//   node stream.mjs --api openai-completions --url http://127.0.0.1:PORT --n 100000 [--reps 1] [--warmup 1]
//   node stream.mjs --api anthropic-messages --url http://127.0.0.1:PORT --n 100000
//   ../../tests/golden/pi-1.6/sessions/node_modules/.bin/node stream.mjs --pi 1.6 --api anthropic-messages --url … --n 100000
//
// Each repetition times `stream(model, context)` from first call to the last event, consuming
// every event and accumulating the text deltas (checked against the length the server sent).
// Output: {"peer", "version", "node", "api", "n", "runs_ms": [...], "events", "chars"}

import { readFileSync } from "node:fs";

/** Where each pi-ai is installed, relative to this script. */
const PI_AI = {
	"0.73": "./node_modules/@mariozechner/pi-ai/",
	"1.6": "../../tests/golden/pi-1.6/sessions/node_modules/@earendil-works/pi-ai/",
};

const USAGE =
	"usage: node stream.mjs --api openai-completions|anthropic-messages --url URL --n N " +
	"[--reps N] [--warmup N] [--expect-chars N] [--pi 0.73|1.6]";

function parseArgs(argv) {
	const options = {
		api: undefined, url: undefined, n: undefined, reps: 1, warmup: 1, "expect-chars": -1, pi: "0.73",
	};
	for (let i = 0; i < argv.length; i += 2) {
		const key = argv[i].replace(/^--/, "");
		const value = argv[i + 1];
		if (!(key in options) || value === undefined) {
			throw new Error(`bad argument ${argv[i]}\n${USAGE}`);
		}
		if (key === "api" || key === "url" || key === "pi") {
			options[key] = value;
		} else {
			options[key] = Number.parseInt(value, 10);
			if (!Number.isInteger(options[key])) {
				throw new Error(`--${key} needs an integer\n${USAGE}`);
			}
		}
	}
	const known = ["openai-completions", "anthropic-messages"].includes(options.api) && options.pi in PI_AI;
	if (!known || !options.url || !(options.n > 0)) {
		throw new Error(USAGE);
	}
	return options;
}

function benchModel(api, url, n) {
	return {
		id: "bench-model",
		name: "Bench model",
		api,
		provider: "bench",
		// The SDKs append /chat/completions (OpenAI, base ends in /v1) or /v1/messages (Anthropic).
		baseUrl: api === "openai-completions" ? `${url}/n/${n}/v1` : `${url}/n/${n}`,
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 128_000,
		maxTokens: 1024,
	};
}

async function runOnce(stream, api, url, n) {
	const model = benchModel(api, url, n);
	const context = {
		messages: [{ role: "user", content: "Tell me a story.", timestamp: Date.now() }],
	};
	const parts = [];
	let events = 0;
	const start = performance.now();
	for await (const event of stream(model, context, { apiKey: "bench-key", maxRetries: 0 })) {
		events++;
		if (event.type === "text_delta") {
			parts.push(event.delta);
		} else if (event.type === "error") {
			throw new Error(`pi-ai stream failed: ${event.error.errorMessage}`);
		}
	}
	const ms = performance.now() - start;
	return { ms, events, chars: parts.join("").length };
}

async function main() {
	const options = parseArgs(process.argv.slice(2));
	const piAi = new URL(PI_AI[options.pi], import.meta.url);
	// (pi-ai 1.x keeps the module-level stream() of 0.x in its "compat" entry point)
	const entry = options.pi === "0.73" ? "dist/index.js" : "dist/compat.js";
	const { stream } = await import(new URL(entry, piAi));
	for (let i = 0; i < options.warmup; i++) {
		await runOnce(stream, options.api, options.url, Math.min(options.n, 1000));
	}
	const runs = [];
	let last;
	for (let i = 0; i < options.reps; i++) {
		globalThis.gc?.();
		last = await runOnce(stream, options.api, options.url, options.n);
		if (options["expect-chars"] >= 0 && last.chars !== options["expect-chars"]) {
			throw new Error(`accumulated ${last.chars} characters, expected ${options["expect-chars"]}`);
		}
		runs.push(last.ms);
	}
	const pkg = JSON.parse(readFileSync(new URL("package.json", piAi)));
	console.log(JSON.stringify({
		peer: "pi-ai",
		version: pkg.version,
		node: process.version,
		api: options.api,
		n: options.n,
		runs_ms: runs,
		events: last.events,
		chars: last.chars,
	}));
}

main().catch((error) => {
	console.error(error instanceof Error ? error.message : String(error));
	process.exit(1);
});
