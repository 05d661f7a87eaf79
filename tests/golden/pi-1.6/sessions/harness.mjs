// Ground truth for what pi_notebook's AgentHarness takes from pi-coding-agent 1.6's AgentSession:
// automatic compaction (before the next request of a running turn, after a run, before a prompt;
// the overflow cases of `_checkCompaction`) and thinking levels clamped to the model. A real
// AgentSession (pi-coding-agent 1.6.0) runs each scenario against a scripted model (no network):
// its stream function answers from the scenario's reply list, with the usage given there, and
// answers the compaction's summary requests itself.
//
//   node_modules/.bin/node harness.mjs
//
// writes harness/scenarios.json: per scenario the model (context window, output limit), the
// compaction settings, the steps and the scripted replies (the replay reads them from here), and
// what pi did: the events (filtered to the ones both sides have), what each model request saw,
// the entries pi wrote (normalised: positions instead of ids, no clock) and the thinking levels.
// tests/harness/test_harness_pi16.py replays every scenario through AgentHarness. The clock, the
// ids and performance.now are faked, so reruns write the same bytes.

import { reset } from "./deterministic.mjs"; // first: before pi is imported
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

const { ModelRuntime, SessionManager, SettingsManager, createAgentSession } = await import(
	"@earendil-works/pi-coding-agent"
);
const { createAssistantMessageEventStream, fauxProvider, isContextOverflow, isRecoverableLength } = await import(
	"@earendil-works/pi-ai"
);

// --- the scripted model --------------------------------------------------------------------------

const SUMMARY_HISTORY = "## Goal\nThe conversation so far, summarised.";
const SUMMARY_PREFIX = "## Original Request\nThe start of the current turn, summarised.";

function usageOf(spec) {
	const u = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, ...(spec.usage ?? {}) };
	const totalTokens = spec.usage?.totalTokens ?? u.input + u.output + u.cacheRead + u.cacheWrite;
	return { ...u, totalTokens, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
}

function contentOf(spec) {
	const content = [];
	if (spec.text !== undefined) content.push({ type: "text", text: spec.text });
	for (const [name, id, args] of spec.toolCalls ?? []) content.push({ type: "toolCall", id, name, arguments: args });
	return content;
}

function textOf(content) {
	if (typeof content === "string") return content;
	return (content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

/** A summary request of the compaction: its (normalised) context leads with pi's summarisation prompt. */
function summaryKind(context) {
	const first = context.messages[0];
	if (first?.role !== "system" || !textOf(first.content).startsWith("You are a context summarization assistant"))
		return null;
	const prompt = textOf(context.messages.at(-1).content);
	return prompt.startsWith("# Conversation") ? "prefix" : "history";
}

function label(message) {
	if (message.role === "assistant") return `assistant:${message.stopReason}`;
	if (message.role === "toolResult") return `toolResult:${message.toolCallId}`;
	return message.role;
}

class Run {
	constructor(name, spec) {
		this.name = name;
		this.spec = spec;
		this.replies = [...spec.replies];
		this.events = [];
		this.requests = [];
	}

	stream = (model, context, options) => {
		const stream = createAssistantMessageEventStream();
		const kind = summaryKind(context);
		let spec;
		if (kind !== null) {
			this.events.push(`<summary:${kind}>`);
			spec = { text: kind === "history" ? SUMMARY_HISTORY : SUMMARY_PREFIX, usage: { input: 40, output: 10 } };
		} else {
			this.events.push("<LLM>");
			this.requests.push({
				roles: context.messages.filter((m) => m.role !== "system").map(label),
				texts: context.messages.filter((m) => m.role === "user").map((m) => textOf(m.content).slice(0, 60)),
				reasoning: options?.reasoning ?? null,
			});
			spec = this.replies.shift();
			if (!spec) throw new Error(`${this.name}: no scripted reply left`);
		}
		const message = {
			role: "assistant",
			content: contentOf(spec),
			api: model.api,
			provider: model.provider,
			model: model.id,
			usage: usageOf(spec),
			stopReason: spec.stopReason ?? ((spec.toolCalls ?? []).length ? "toolUse" : "stop"),
			...(spec.errorMessage ? { errorMessage: spec.errorMessage } : {}),
			timestamp: Date.now(),
		};
		queueMicrotask(() => {
			stream.push({ type: "start", partial: { ...message, content: [] } });
			if (message.stopReason === "error" || message.stopReason === "aborted")
				stream.push({ type: "error", reason: message.stopReason, error: message });
			else stream.push({ type: "done", reason: message.stopReason, message });
			stream.end(message);
		});
		return stream;
	};

	listener = (event) => {
		const t = event.type;
		if (t === "agent_start" || t === "agent_end" || t === "turn_start" || t === "turn_end") this.events.push(t);
		else if (t === "message_end") this.events.push(`message_end(${label(event.message)})`);
		else if (t === "tool_execution_end") this.events.push(`tool_execution_end(${event.toolCallId})`);
		else if (t === "compaction_start") this.events.push(`compaction_start(${event.reason})`);
		else if (t === "compaction_end") {
			const parts = [event.reason, `willRetry=${event.willRetry}`, event.result ? "result" : "no-result"];
			if (event.aborted) parts.push("aborted");
			if (event.errorMessage) parts.push(event.errorMessage);
			this.events.push(`compaction_end(${parts.join(",")})`);
		}
	};
}

// --- the echo tool -------------------------------------------------------------------------------

const ECHO = {
	name: "echo",
	label: "echo",
	description: "Echo the text back.",
	parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
	execute: async (_id, params) => ({ content: [{ type: "text", text: `echo:${params.text}` }], details: {} }),
};

// --- normalised session entries ------------------------------------------------------------------

function normalise(entries) {
	const index = new Map(entries.map((e, i) => [e.id, i]));
	return entries.map((e) => {
		const out = { type: e.type };
		if (e.type === "message") {
			out.role = e.message.role;
			if (e.message.role === "assistant") {
				out.stopReason = e.message.stopReason;
				out.thinkingLevel = e.message.thinkingLevel ?? null;
			}
			if (e.message.role === "user") out.text = textOf(e.message.content).slice(0, 60);
			if (e.message.role === "toolResult") out.toolCallId = e.message.toolCallId;
		} else if (e.type === "compaction") {
			out.firstKept = index.get(e.firstKeptEntryId) ?? null;
			out.tokensBefore = e.tokensBefore;
			out.summary = e.summary;
		} else if (e.type === "context_edit") {
			out.target = index.get(e.targetId) ?? null;
			out.hidden = e.replacement === null;
		} else if (e.type === "thinking_level_change") {
			out.thinkingLevel = e.thinkingLevel;
		} else if (e.type === "model_change") {
			out.model = e.modelId;
		}
		out.parent = e.parentId === null ? null : (index.get(e.parentId) ?? null);
		return out;
	});
}

// --- one scenario --------------------------------------------------------------------------------

const MODELS = {
	think: { id: "faux-think", reasoning: true },
	plain: { id: "faux-plain", reasoning: false },
};

async function runScenario(n, name, spec) {
	reset(n);
	// a fixed place (its path is in pi's system prompt) and pi_notebook's default prompt as
	// SYSTEM.md, so pi's leading system message holds no path of this checkout
	const root = `/tmp/pi16-golden-harness-${n}`;
	rmSync(root, { recursive: true, force: true });
	const work = join(root, "work");
	mkdirSync(join(root, "agent"), { recursive: true });
	mkdirSync(work, { recursive: true });
	writeFileSync(join(root, "agent", "SYSTEM.md"), "You are a helpful assistant.");
	const window = spec.model ?? {};
	const faux = fauxProvider({
		provider: "faux",
		models: [
			{ ...MODELS.think, contextWindow: window.contextWindow ?? 128000, maxTokens: window.maxTokens ?? 16384 },
			{ ...MODELS.plain, contextWindow: window.contextWindow ?? 128000, maxTokens: window.maxTokens ?? 16384 },
		],
	});
	const runtime = await ModelRuntime.create({
		authPath: join(root, "agent", "auth.json"),
		modelsPath: null,
		allowModelNetwork: false,
		refreshOnCreate: false,
	});
	runtime.registerNativeProvider(faux.provider);
	await runtime.setRuntimeApiKey("faux", "scripted-model-needs-no-key");
	const sm = SessionManager.create(work, join(root, "sessions"));
	const settings = SettingsManager.inMemory({
		compaction: { enabled: true, ...(spec.compaction ?? {}) },
		retry: { enabled: false },
		...(spec.defaultThinkingLevel ? { defaultThinkingLevel: spec.defaultThinkingLevel } : {}),
	});
	const run = new Run(name, spec);
	const { session } = await createAgentSession({
		cwd: work,
		agentDir: join(root, "agent"),
		modelRuntime: runtime,
		model: faux.getModel(MODELS[spec.startModel ?? "think"].id),
		...(spec.thinkingLevel ? { thinkingLevel: spec.thinkingLevel } : {}),
		sessionManager: sm,
		tools: ["echo"],
		customTools: [ECHO],
		settingsManager: settings,
	});
	session.agent.streamFunction = run.stream;
	session.subscribe(run.listener);
	const created = sm.getEntries().length; // pi's own start entries (model, thinking level)
	const levels = [session.thinkingLevel];
	for (const step of spec.steps) {
		if (step.prompt !== undefined) {
			run.events.push(`<prompt:${step.prompt.split(" Lorem")[0]}>`);
			await session.prompt(step.prompt);
		} else if (step.thinking !== undefined) {
			run.events.push(`<thinking:${step.thinking}>`);
			session.setThinkingLevel(step.thinking, { persist: true });
		} else if (step.model !== undefined) {
			run.events.push(`<model:${step.model}>`);
			await session.setModel(faux.getModel(MODELS[step.model].id));
		} else if (step.recordThinking !== undefined) {
			// a level recorded on the branch by someone else (e.g. a model that supports it)
			run.events.push(`<recorded:${step.recordThinking}>`);
			sm.appendThinkingLevelChange(step.recordThinking);
		} else {
			throw new Error(`${name}: unknown step ${JSON.stringify(step)}`);
		}
		levels.push(session.thinkingLevel);
	}
	const entries = sm.getEntries();
	const normalised = normalise(entries);
	const system = entries.find((e) => e.type === "message" && e.message.role === "system")?.message;
	rmSync(root, { recursive: true, force: true });
	return {
		...spec,
		pi: {
			events: run.events,
			requests: run.requests,
			createdEntries: created,
			// pi's leading system message (its prompt and tool declarations), as it wrote it
			systemMessage: system ?? null,
			entries: normalised,
			thinkingLevels: levels,
			repliesLeft: run.replies.length,
		},
	};
}

// --- the scenarios -------------------------------------------------------------------------------

// ~75 estimated tokens each, so a compaction has something to summarise and something to keep
const FILL = " Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.".repeat(4);
const long = (t) => `${t}${FILL}`;
const text = (t, usage, extra = {}) => ({ text: long(t), usage, ...extra });
const SMALL = { input: 100, output: 20 };
const WINDOW = { contextWindow: 4000, maxTokens: 1000 };
const SETTINGS = { reserveTokens: 500, keepRecentTokens: 60 };
const OVERFLOW = "prompt is too long: 5213 tokens > 4000 maximum";

const SCENARIOS = {
	// --- point 2: compaction before the next request of a running turn ---
	"threshold-before-next-request": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Echo something long") }],
		replies: [
			text("First answer.", SMALL),
			{ toolCalls: [["echo", "call_1", { text: "long" }]], usage: { input: 3400, output: 200 } },
			text("Echoed after compacting.", { input: 900, output: 30 }),
		],
	},
	"threshold-after-run": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }, { prompt: long("Third question") }],
		replies: [
			text("First answer.", SMALL),
			text("A long answer.", { input: 3400, output: 200 }),
			text("Third answer.", SMALL),
		],
	},
	"threshold-boundary": {
		model: WINDOW,
		compaction: SETTINGS,
		// 3500 = 4000 - 500 is not over the threshold; 3501 is
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }, { prompt: long("Third question") }],
		replies: [text("At the threshold.", { totalTokens: 3500 }), text("Over it.", { totalTokens: 3501 }), text("Third answer.", SMALL)],
	},
	"threshold-before-next-request-too-little-history": {
		// over the threshold after the tool call, but the only turn is the running one: nothing to
		// summarise before the next request; after the run its start is summarised (a split turn)
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("Echo something long") }],
		replies: [
			{ toolCalls: [["echo", "call_1", { text: "long" }]], usage: { input: 3400, output: 200 } },
			text("Echoed.", { input: 3700, output: 30 }),
		],
	},
	// --- point 3: the overflow cases of _checkCompaction ---
	"overflow-error-retried": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [
			text("First answer.", SMALL),
			{ stopReason: "error", errorMessage: OVERFLOW },
			text("Answered after compacting.", SMALL),
		],
	},
	"overflow-retry-fails": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }, { prompt: long("Third question") }],
		replies: [
			text("First answer.", SMALL),
			{ stopReason: "error", errorMessage: OVERFLOW },
			{ stopReason: "error", errorMessage: OVERFLOW },
			text("Third answer.", SMALL),
		],
	},
	"overflow-on-the-first-prompt": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }],
		replies: [
			{ stopReason: "error", errorMessage: OVERFLOW },
			{ stopReason: "error", errorMessage: OVERFLOW },
		],
	},
	"aborted-reply-compacted-before-the-next-prompt": {
		model: WINDOW,
		compaction: SETTINGS,
		// an aborted reply is skipped after its run, but checked (with its usage) before a prompt
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }, { prompt: long("Third question") }],
		replies: [
			text("First answer.", SMALL),
			text("Partial", { input: 3500, output: 100 }, { stopReason: "aborted", errorMessage: "Request was aborted" }),
			text("Third answer.", SMALL),
		],
	},
	"silent-overflow-not-retried": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }, { prompt: long("Third question") }],
		replies: [
			text("First answer.", SMALL),
			text("Truncated silently.", { input: 3900, cacheRead: 200, output: 20 }),
			text("Third answer.", SMALL),
		],
	},
	"length-recoverable-retried": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [
			text("First answer.", SMALL),
			text("Cut off after a few wor", { input: 300, output: 120 }, { stopReason: "length" }),
			text("Complete answer.", SMALL),
		],
	},
	"length-at-the-limit": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [
			text("First answer.", SMALL),
			text("Used every output token", { input: 300, output: 1000 }, { stopReason: "length" }),
		],
	},
	"rate-limit-is-not-overflow": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [
			text("First answer.", SMALL),
			{ stopReason: "error", errorMessage: "429 Rate limit reached: too many tokens per minute" },
		],
	},
	"overflow-pattern-of-pi-16": {
		model: WINDOW,
		compaction: SETTINGS,
		// worded as OpenRouter does: matched by pi 1.6's patterns
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [
			text("First answer.", SMALL),
			{
				stopReason: "error",
				errorMessage: "This endpoint's maximum context length is 4000 tokens. However, you requested about 5200 tokens",
			},
			text("Answered after compacting.", SMALL),
		],
	},
	"disabled-compaction": {
		model: WINDOW,
		compaction: { ...SETTINGS, enabled: false },
		steps: [{ prompt: long("First question") }, { prompt: long("Second question") }],
		replies: [text("First answer.", SMALL), { stopReason: "error", errorMessage: OVERFLOW }],
	},
	// --- point 4: thinking levels clamped to the model ---
	"thinking-levels-clamped": {
		defaultThinkingLevel: "xhigh",
		steps: [
			{ prompt: "one" },
			{ thinking: "max" },
			{ thinking: "low" },
			{ prompt: "two" },
			{ model: "plain" },
			{ thinking: "high" },
			{ prompt: "three" },
			{ model: "think" },
			{ prompt: "four" },
		],
		replies: [text("1", SMALL), text("2", SMALL), text("3", SMALL), text("4", SMALL)],
	},
	"thinking-recorded-on-the-branch": {
		thinkingLevel: "high",
		steps: [
			{ prompt: "one" },
			{ recordThinking: "xhigh" },
			{ prompt: "two" },
			{ recordThinking: "minimal" },
			{ prompt: "three" },
		],
		replies: [text("1", SMALL), text("2", SMALL), text("3", SMALL)],
	},
	// A length stop (below maxTokens) with a tool call: the call is not run, its error result asks
	// for it again, and the run goes on: nothing is omitted, the next request holds both.
	"length-with-a-tool-call-mid-run": {
		model: WINDOW,
		compaction: SETTINGS,
		steps: [{ prompt: long("First question") }, { prompt: long("Echo it") }],
		replies: [
			text("First answer.", SMALL),
			{
				text: "Echoing",
				toolCalls: [["echo", "call_1", { text: "cut" }]],
				usage: { input: 300, output: 120 },
				stopReason: "length",
			},
			text("Re-issued.", SMALL),
		],
	},
};

// --- which replies count as a context overflow (pi-ai 1.6's isContextOverflow) -------------------

const ERROR_TEXTS = [
	"prompt is too long: 213462 tokens > 200000 maximum",
	"HTTP 400: prompt is too long: 208000 tokens > 200000 maximum (invalid_request_error)",
	'413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
	"Your input exceeds the context window of this model. Please adjust your input.",
	"Requested token count exceeds the model's maximum context length of 131072 tokens",
	"litellm.ContextWindowExceededError: litellm.BadRequestError: Context Window exceeded for given call.",
	"Input length (265330) exceeds model's maximum context length (262144).",
	"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
	"HTTP 400: The input token count (1234567) exceeds the maximum number of tokens allowed (1048576). (INVALID_ARGUMENT)",
	"This model's maximum prompt length is 131072 but the request contains 537812 tokens",
	"Please reduce the length of the messages or completion",
	"This endpoint's maximum context length is 4000 tokens. However, you requested about 5200 tokens",
	"HTTP 400: This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. (invalid_request_error)",
	"Input length 300000 exceeds the maximum allowed input length of 262144 tokens.",
	"The input (300000 tokens) is longer than the model's context length (262144 tokens).",
	"the request exceeds the available context size, try increasing it",
	"HTTP 400: request (631 tokens) exceeds the available context size (256 tokens), try increasing it (exceed_context_size_error)",
	"The number of tokens to keep from the initial prompt is greater than the context length",
	"prompt token count of 140000 exceeds the limit of 128000",
	'github-copilot API error (413): {"message":"failed to parse request","code":""}',
	"invalid params, context window exceeds limit",
	"Your request exceeded model token limit: 262144 (requested: 300000)",
	"Prompt has 300,000 tokens, but the configured context size is 262,144 tokens",
	"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
	'{"code":"1261","message":"Prompt too long"}',
	'{"code":"1261","message":"Prompt exceeds max length"}',
	"Range of input length should be [1, 98304]",
	"prompt too long; exceeded max context length by 1200 tokens",
	"model_context_window_exceeded",
	"HTTP 400: Request too long (context_length_exceeded)",
	"Too many tokens in the request",
	"token limit exceeded",
	"Input is too long for requested model.",
	"413: Payload Too Large",
	// not overflows
	"input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
	"context window size exceeded",
	"HTTP 413: Request Entity Too Large",
	"Throttling error: Too many tokens, please wait before trying again.",
	"ThrottlingException: Too many tokens, please wait before trying again.",
	"429 Rate limit reached: too many tokens per minute",
	"HTTP 429: Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Requested 40000. (rate_limit_exceeded)",
	"HTTP 429: You exceeded your current quota (insufficient_quota)",
	"Too many requests, slow down",
	"Service unavailable: prompt is too long for the queue",
	"HTTP 401: Invalid API Key (authentication_error) — check the API key",
	"HTTP 500: The model produced output that does not match the expected format",
];

function overflowCases() {
	const cases = [];
	const message = ({ usage, ...over }) => ({
		role: "assistant",
		content: [],
		api: "x",
		provider: "x",
		model: "m",
		stopReason: "error",
		timestamp: 0,
		...over,
		usage: usageOf({ usage }),
	});
	const add = (over, contextWindow, maxTokens) => {
		const m = message(over);
		cases.push({
			message: { stopReason: m.stopReason, errorMessage: m.errorMessage ?? null, provider: m.provider, usage: over.usage ?? {} },
			contextWindow,
			maxTokens,
			overflow: isContextOverflow(m),
			overflowInWindow: isContextOverflow(m, contextWindow),
			recoverableLength: isRecoverableLength(m, maxTokens),
		});
	};
	for (const text of ERROR_TEXTS) add({ errorMessage: text }, 1000, 100);
	add({ errorMessage: "400 status code (no body)", provider: "cerebras" }, 1000, 100);
	add({ errorMessage: "413 status code (no body)", provider: "cerebras" }, 1000, 100);
	add({ errorMessage: "400 status code (no body)", provider: "openai" }, 1000, 100);
	add({ stopReason: "aborted", errorMessage: "prompt is too long" }, 1000, 100);
	add({ stopReason: "aborted", errorMessage: "Request was aborted" }, 1000, 100);
	// silent overflow: a successful reply whose prompt did not fit
	add({ stopReason: "stop", usage: { input: 900, cacheRead: 200 } }, 1000, 100);
	add({ stopReason: "stop", usage: { input: 800, cacheRead: 200 } }, 1000, 100);
	add({ stopReason: "toolUse", usage: { input: 1100 } }, 1000, 100);
	add({ stopReason: "error", errorMessage: "HTTP 500: oops", usage: { input: 1100 } }, 1000, 100);
	// a length stop with no output and the window filled (Xiaomi MiMo)
	add({ stopReason: "length", usage: { input: 990, output: 0 } }, 1000, 100);
	add({ stopReason: "length", usage: { input: 980, cacheRead: 10, output: 0 } }, 1000, 100);
	add({ stopReason: "length", usage: { input: 989, output: 0 } }, 1000, 100);
	add({ stopReason: "length", usage: { input: 1000, output: 5 } }, 1000, 100);
	// a length stop below the output limit is recoverable (compact and retry once)
	add({ stopReason: "length", usage: { input: 300, output: 99 } }, 1000, 100);
	add({ stopReason: "length", usage: { input: 300, output: 100 } }, 1000, 100);
	add({ stopReason: "length", usage: { input: 300, output: 99 } }, 1000, 0);
	add({ stopReason: "stop", usage: { input: 300, output: 99 } }, 1000, 100);
	return cases;
}

const out = {};
let n = 0;
for (const [name, spec] of Object.entries(SCENARIOS)) {
	out[name] = await runScenario(++n, name, spec);
	console.log(name, out[name].pi.events.join(" > "));
}
mkdirSync(join(HERE, "harness"), { recursive: true });
writeFileSync(join(HERE, "harness", "scenarios.json"), `${JSON.stringify(out, null, 1)}\n`);
const cases = overflowCases();
writeFileSync(join(HERE, "harness", "overflow-cases.json"), `${JSON.stringify(cases, null, 1)}\n`);
console.log(cases.length, "overflow cases");
console.log(Object.keys(out).length, "scenarios");
