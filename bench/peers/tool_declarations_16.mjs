// pi-agent-core 1.6.0's Agent on the tool-declaration workloads of bench/tool_declarations_bench.py:
// N turns of one no-op tool call each (then a closing reply), the tools either unchanged (the
// loop finds nothing to declare before each request) or changed before every turn by
// prepareNextTurnWithContext (a system message declares the change before each request).
// Scripted in-process model, every event consumed; timed inside node after one warm-up run.
//
//   tests/golden/pi-1.6/agent/node_modules/.bin/node bench/peers/tool_declarations_16.mjs \
//       --turns 1000 --changing 0|1 [--reps 1]
//
// pi 1.6 comes from the pinned install of tests/golden/pi-1.6/agent (`npm ci` there; it needs
// Node >= 22.19, which that install brings). Prints one JSON line per repetition.

import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MODULES = join(ROOT, "tests", "golden", "pi-1.6", "agent", "node_modules", "@earendil-works");
const { Agent } = await import(pathToFileURL(join(MODULES, "pi-agent-core", "dist", "index.js")).href);
const { createAssistantMessageEventStream } = await import(
	pathToFileURL(join(MODULES, "pi-ai", "dist", "index.js")).href
);

const args = Object.fromEntries(
	process.argv.slice(2).reduce((pairs, value, i, all) => (i % 2 ? pairs : [...pairs, [all[i].slice(2), all[i + 1]]]), []),
);
const TURNS = Number(args.turns ?? 1000);
const CHANGING = args.changing === "1";
const REPS = Number(args.reps ?? 1);

const MODEL = {
	id: "scripted",
	name: "Scripted",
	api: "scripted",
	provider: "bench",
	baseUrl: "",
	reasoning: false,
	input: ["text"],
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
	contextWindow: 1e9,
	maxTokens: 8192,
};
const USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

const tool = (name) => ({
	name,
	label: name,
	description: `The ${name} tool: does nothing and says ok.`,
	parameters: { type: "object", properties: {} },
	execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
});
const NOOP = tool("noop");
const EXTRA = tool("extra");

function streamFn() {
	let calls = 0;
	return (model) => {
		const turn = calls++;
		const stream = createAssistantMessageEventStream();
		const closing = turn >= TURNS;
		const message = {
			role: "assistant",
			content: closing ? [{ type: "text", text: "done" }] : [{ type: "toolCall", id: `call_${turn}`, name: "noop", arguments: {} }],
			api: model.api,
			provider: model.provider,
			model: model.id,
			usage: USAGE,
			stopReason: closing ? "stop" : "toolUse",
			timestamp: Date.now(),
		};
		queueMicrotask(() => {
			const partial = { ...message, content: [] };
			stream.push({ type: "start", partial });
			if (closing) {
				stream.push({ type: "text_start", contentIndex: 0, partial });
				stream.push({ type: "text_delta", contentIndex: 0, delta: "done", partial });
				stream.push({ type: "text_end", contentIndex: 0, content: "done", partial });
			} else {
				stream.push({ type: "toolcall_start", contentIndex: 0, partial });
				stream.push({ type: "toolcall_delta", contentIndex: 0, delta: "{}", partial });
				stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: message.content[0], partial });
			}
			stream.push({ type: "done", reason: message.stopReason, message });
			stream.end(message);
		});
		return stream;
	};
}

async function once() {
	let turns = 0;
	const agent = new Agent({
		streamFn: streamFn(),
		initialState: { systemPrompt: "You are a benchmark.", model: MODEL, tools: [NOOP] },
		...(CHANGING
			? {
					prepareNextTurnWithContext: async (turn) => {
						turns++;
						// the run's own context, its tool list swapped (as the Python side does)
						turn.context.tools = turns % 2 ? [NOOP, EXTRA] : [NOOP];
						return undefined;
					},
				}
			: {}),
	});
	let events = 0;
	agent.subscribe(() => {
		events++;
	});
	const start = performance.now();
	await agent.prompt("Go.");
	const ms = performance.now() - start;
	const messages = agent.state.messages;
	const patches = messages.filter((m) => m.role === "system").length - 1;
	const last = messages.at(-1);
	if (last.role !== "assistant" || last.content[0]?.text !== "done") throw new Error("the run went wrong");
	return { ms, events, messages: messages.length, patches };
}

await once(); // warm-up
for (let r = 0; r < REPS; r++) console.log(JSON.stringify(await once()));
