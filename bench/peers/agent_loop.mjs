// The real pi agent loop on scripted workloads, for bench/compare_agent_loop.py. Prints one JSON
// line with the timings. `--pi 0.73` (the default) runs @mariozechner/pi-agent-core 0.73.1, pinned
// in package.json here; `--pi 1.6` runs @earendil-works/pi-agent-core 1.6.0 from
// tests/golden/pi-1.6/sessions (`npm ci` there; run with the Node 22 it installs).
//
//   node agent_loop.mjs --turns 1 --deltas 100000 --tools 0                 # one 100k-delta reply
//   node agent_loop.mjs --turns 1 --deltas 0 --tools 1000 --execution sequential
//   node agent_loop.mjs --turns 1000 --deltas 100 --tools 1 --reps 3
//   node agent_loop.mjs --turns 1 --deltas 100000 --tools 0 --chunk 0      # whole reply at once
//   ../../tests/golden/pi-1.6/sessions/node_modules/.bin/node agent_loop.mjs --pi 1.6 --turns 1000 --deltas 0 --tools 1
//
// A workload is `turns` model replies that each stream `deltas` text deltas and then `tools`
// no-op tool calls, followed by one closing reply of a single text delta (so the run ends with
// stopReason "stop"); with no tool calls the first reply already ends the run (--turns 1).
//
// The scripted stream function builds each reply the way pi's providers do (one shared mutable
// partial message, `text +=` per delta) and hands it to the consumer every `--chunk` deltas
// (default 1000, like bench/agent_loop_bench.py's CHUNK_DELTAS: a provider parsing one network
// read). `--chunk 0` pushes the whole reply before returning the stream, so pi's event backlog
// holds every event of it (the case shared/spec/performance.md measured). The timed span is
// `await agent.prompt(...)` with one subscriber that consumes every agent event; a fresh Agent is
// built for each repetition, after one untimed warm-up run. pi 1.6 opens the transcript with a
// system message (the prompt and the tools), so its runs hold one message more.

import { readFileSync } from "node:fs";

/** Where each pi's packages are installed, relative to this script. */
const PI_PACKAGES = {
	"0.73": "./node_modules/@mariozechner/",
	"1.6": "../../tests/golden/pi-1.6/sessions/node_modules/@earendil-works/",
};

const DELTA_TEXTS = [
	" The", " quick", " brown", " fox", " jumps", " over", " the", " lazy",
	" dog", ".", "\n\n", ' "Café"', " naïve", " 👍", " {x}", " done",
];

function parseArgs(argv) {
	const options = {
		turns: 1, deltas: 0, tools: 0, execution: "parallel", chunk: 1000, reps: 3, warmup: 1,
		pi: "0.73",
	};
	const strings = new Set(["execution", "pi"]);
	for (let i = 0; i < argv.length; i += 2) {
		const key = argv[i].replace(/^--/, "");
		const value = argv[i + 1];
		if (!(key in options) || value === undefined) {
			throw new Error(`usage: node agent_loop.mjs [--turns N] [--deltas N] [--tools N] ` +
				`[--execution parallel|sequential] [--chunk N] [--reps N] [--warmup N] ` +
				`[--pi 0.73|1.6]; bad argument ${argv[i]}`);
		}
		options[key] = strings.has(key) ? value : Number.parseInt(value, 10);
		if (!strings.has(key) && !(Number.isInteger(options[key]) && options[key] >= 0)) {
			throw new Error(`--${key} needs a non-negative integer, got ${value}`);
		}
	}
	if (options.tools === 0 && options.turns !== 1) {
		throw new Error("a reply without tool calls ends the run: --tools 0 needs --turns 1");
	}
	if (options.execution !== "parallel" && options.execution !== "sequential") {
		throw new Error(`--execution must be parallel or sequential, got ${options.execution}`);
	}
	if (!(options.pi in PI_PACKAGES)) {
		throw new Error(`--pi must be one of ${Object.keys(PI_PACKAGES).join(", ")}, got ${options.pi}`);
	}
	return options;
}

const model = {
	id: "scripted",
	name: "Scripted model",
	api: "scripted",
	provider: "bench",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1_000_000_000,
	maxTokens: 16_384,
};

/** The workloads' tool; `Type` is pi-ai's TypeBox where it has one (0.73), else plain JSON Schema. */
function noopTool(Type) {
	return {
		name: "noop",
		label: "No-op",
		description: "Does nothing and says ok.",
		parameters: Type ? Type.Object({}) : { type: "object", properties: {} },
		execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
	};
}

function emptyUsage() {
	return {
		input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
	};
}

/** Lets every pending promise callback (the consumer) run before the producer goes on. */
function handOff() {
	return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A stream function that plays `turns` replies of `deltas` text deltas + `tools` tool calls.
 * With `chunk` > 0 the reply is produced asynchronously and handed to the consumer every `chunk`
 * deltas (as a provider does per network read); with `chunk` 0 the whole reply is pushed before
 * the stream is returned (pi's backlog then holds every event of the reply).
 */
function scriptedStreamFn(pi, { turns, deltas, tools, chunk }) {
	let call = 0;
	return (streamModel) => {
		const turn = call++;
		const closing = turn >= turns;
		const deltaCount = closing ? 1 : deltas;
		const toolCount = closing ? 0 : tools;
		const stream = pi.createAssistantMessageEventStream();
		// Runs synchronously up to its first hand-off: with chunk 0, the whole reply.
		void produceReply(stream, streamModel, turn, deltaCount, toolCount, chunk);
		return stream;
	};
}

async function produceReply(stream, streamModel, turn, deltaCount, toolCount, chunk) {
	const output = {
		role: "assistant",
		content: [],
		api: streamModel.api,
		provider: streamModel.provider,
		model: streamModel.id,
		usage: emptyUsage(),
		stopReason: toolCount > 0 ? "toolUse" : "stop",
		timestamp: Date.now(),
	};
	stream.push({ type: "start", partial: output });
	if (deltaCount > 0) {
		const block = { type: "text", text: "" };
		output.content.push(block);
		const contentIndex = output.content.length - 1;
		stream.push({ type: "text_start", contentIndex, partial: output });
		for (let i = 0; i < deltaCount; i++) {
			const delta = DELTA_TEXTS[i % DELTA_TEXTS.length];
			block.text += delta;
			stream.push({ type: "text_delta", contentIndex, delta, partial: output });
			if (chunk > 0 && i % chunk === chunk - 1) {
				await handOff();
			}
		}
		stream.push({ type: "text_end", contentIndex, content: block.text, partial: output });
	}
	for (let t = 0; t < toolCount; t++) {
		const toolCall = { type: "toolCall", id: `call_${turn}_${t}`, name: "noop", arguments: {} };
		output.content.push(toolCall);
		const contentIndex = output.content.length - 1;
		stream.push({ type: "toolcall_start", contentIndex, partial: output });
		stream.push({ type: "toolcall_delta", contentIndex, delta: "{}", partial: output });
		stream.push({ type: "toolcall_end", contentIndex, toolCall, partial: output });
	}
	stream.push({ type: "done", reason: output.stopReason, message: output });
}

async function runOnce(pi, workload) {
	const agent = new pi.Agent({
		initialState: { systemPrompt: "You are a benchmark.", model, tools: [pi.noop], messages: [] },
		streamFn: scriptedStreamFn(pi, workload),
		toolExecution: workload.execution,
	});
	let events = 0;
	agent.subscribe(() => {
		events++;
	});
	const start = performance.now();
	await agent.prompt("Go.");
	const ms = performance.now() - start;
	const messages = agent.state.messages;
	const opening = pi.version.startsWith("0.") ? 2 : 3; // (pi 1.6: the system message first)
	const expectedMessages = workload.tools > 0 ? opening + workload.turns * (1 + workload.tools) : opening;
	if (messages.length !== expectedMessages || agent.state.errorMessage) {
		throw new Error(`unexpected run: ${messages.length} messages (expected ${expectedMessages}), ` +
			`error ${agent.state.errorMessage ?? "none"}`);
	}
	return { ms, events, messages: messages.length };
}

/** The chosen pi's Agent, event stream, tool and version. */
async function loadPi(which) {
	const packages = new URL(PI_PACKAGES[which], import.meta.url);
	const core = await import(new URL("pi-agent-core/dist/index.js", packages));
	const ai = await import(new URL("pi-ai/dist/index.js", packages));
	const { version } = JSON.parse(readFileSync(new URL("pi-agent-core/package.json", packages)));
	return {
		Agent: core.Agent,
		createAssistantMessageEventStream: ai.createAssistantMessageEventStream,
		noop: noopTool(ai.Type),
		version,
	};
}

async function main() {
	const workload = parseArgs(process.argv.slice(2));
	const pi = await loadPi(workload.pi);
	const small = { ...workload, turns: Math.min(workload.turns, 10), deltas: Math.min(workload.deltas, 1000) };
	for (let i = 0; i < workload.warmup; i++) {
		await runOnce(pi, small);
	}
	const runs = [];
	let last;
	for (let i = 0; i < workload.reps; i++) {
		globalThis.gc?.();
		last = await runOnce(pi, workload);
		runs.push(last.ms);
	}
	console.log(JSON.stringify({
		peer: "pi-agent-core",
		version: pi.version,
		node: process.version,
		workload,
		runs_ms: runs,
		events: last?.events ?? 0,
		messages: last?.messages ?? 0,
	}));
}

main().catch((error) => {
	console.error(error instanceof Error ? error.stack : String(error));
	process.exit(1);
});
