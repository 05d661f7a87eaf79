// Ground truth for pi_notebook's pi 1.6 session support, produced by the real pi 1.6.0 packages.
//
//   node_modules/.bin/node generate.mjs            pi writes pi/*.jsonl, and its own reading
//                                                  of each file next to it (*.pi.json)
//   node_modules/.bin/node generate.mjs read DIR   pi reads every DIR/*.jsonl (files pi_notebook
//                                                  wrote) and writes its reading as DIR/*.pi.json
//
// A reading is {leafId, context: buildSessionContext() after SessionManager.open, stats: the
// token/cost totals of AgentSession.getSessionStats}. No network, no model calls: the sessions
// are driven through SessionManager with a fake clock and seeded ids, so reruns give the same
// bytes. See README.md.

import { reset } from "./deterministic.mjs"; // first: before pi is imported
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

const {
	AgentSession,
	ModelRuntime,
	SessionManager,
	SettingsManager,
	buildSessionContext,
	createAgentSession,
	estimateTokens,
} = await import("@earendil-works/pi-coding-agent");
const { fauxAssistantMessage, fauxProvider, fauxText, fauxThinking, fauxToolCall } = await import(
	"@earendil-works/pi-ai"
);
const { getCurrentSystemPrompt, getCurrentTools } = await import("@earendil-works/pi-ai");

// --- what pi reads ---------------------------------------------------------------------------------

function reading(file) {
	const manager = SessionManager.open(file);
	const fake = { sessionManager: manager, sessionFile: file, sessionId: manager.getSessionId() };
	fake.getContextUsage = () => undefined;
	const stats = AgentSession.prototype.getSessionStats.call(fake);
	// every other branch too: the context at each entry without children
	const entries = manager.getEntries();
	const parents = new Set(entries.map((e) => e.parentId));
	const branches = {};
	for (const e of entries) {
		if (!parents.has(e.id)) branches[e.id] = buildSessionContext(entries, e.id).messages;
	}
	return {
		leafId: manager.getLeafId(),
		context: manager.buildSessionContext(),
		systemPrompt: getCurrentSystemPrompt(manager.buildSessionContext().messages),
		toolNames: getCurrentTools(manager.buildSessionContext().messages).map((t) => t.name),
		estimates: manager.buildSessionContext().messages.map((m) => estimateTokens(m)),
		stats: { tokens: stats.tokens, cost: stats.cost },
		branches,
	};
}

function writeReading(file) {
	writeFileSync(file.replace(/\.jsonl$/, ".pi.json"), `${JSON.stringify(reading(file), null, 1)}\n`);
}

// --- building blocks -------------------------------------------------------------------------------

const TOOLS = {
	read: {
		name: "read",
		description: "Read a file",
		parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
	},
	bash: {
		name: "bash",
		description: "Run a command",
		parameters: { type: "object", properties: { command: { type: "string" } } },
	},
	edit: {
		name: "edit",
		description: "Edit a file",
		parameters: { type: "object", properties: {} },
	},
	read2: {
		name: "read",
		description: "Read a file (with offsets)",
		parameters: { type: "object", properties: { path: { type: "string" }, offset: { type: "number" } } },
	},
};

function usage(input, output, extra = {}) {
	const cost = { input: input / 1e6, output: (output * 2) / 1e6, cacheRead: 0, cacheWrite: 0 };
	cost.total = cost.input + cost.output;
	return {
		input,
		output,
		cacheRead: extra.cacheRead ?? 0,
		cacheWrite: extra.cacheWrite ?? 0,
		...(extra.cacheWrite1h !== undefined ? { cacheWrite1h: extra.cacheWrite1h } : {}),
		...(extra.reasoning !== undefined ? { reasoning: extra.reasoning } : {}),
		totalTokens: input + output + (extra.cacheRead ?? 0) + (extra.cacheWrite ?? 0),
		cost: { ...cost, ...(extra.totalFromProvider ? { totalFromProvider: true } : {}) },
	};
}

const system = (fields) => ({ role: "system", content: "", ...fields, timestamp: Date.now() });
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
function assistant(content, fields = {}) {
	const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content;
	return {
		role: "assistant",
		content: blocks,
		api: "faux",
		provider: "faux",
		model: "faux-1",
		usage: usage(10, 5),
		stopReason: blocks.some((b) => b.type === "toolCall") ? "toolUse" : "stop",
		timestamp: Date.now(),
		...fields,
	};
}
const toolResult = (id, name, text, fields = {}) => ({
	role: "toolResult",
	toolCallId: id,
	toolName: name,
	content: [{ type: "text", text }],
	isError: false,
	timestamp: Date.now(),
	...fields,
});

// --- the scenarios pi writes -----------------------------------------------------------------------

const SCENARIOS = {
	// System messages with section patches and tool changes, the new message fields, a deferred
	// reply, usage entries, an unknown entry type, settings changes.
	"system-messages"(sm) {
		sm.appendModelChange("faux", "faux-1");
		sm.appendThinkingLevelChange("max");
		sm.appendMessage(
			system({
				content: "You are pi, a coding agent.",
				sections: { cwd: "Current directory: /work", date: "Today is 2026-11-20." },
				toolsAdded: [TOOLS.read, TOOLS.bash],
			}),
		);
		sm.appendMessage(user("List the files."));
		sm.appendMessage(
			assistant(
				[
					{ type: "thinking", thinking: "ls it", thinkingSignature: "sig" },
					{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "ls" }, namespace: "builtin" },
				],
				{
					responseModel: "faux-1-2026",
					responseId: "resp_1",
					providerThinkingLevel: "max_effort",
					thinkingLevel: "max",
					rawStopReason: "tool_use",
					durationMs: 1234,
					usage: usage(100, 20, { cacheRead: 50, cacheWrite: 30, cacheWrite1h: 10, reasoning: 7, totalFromProvider: true }),
					futureAssistantField: { kept: true },
				},
			),
		);
		sm.appendMessage(
			toolResult("call_1", "bash", "a.txt\nb.txt", {
				durationMs: 12,
				usage: usage(3, 1),
				nestedCalls: { calls: [{ id: "n1", name: "grep", status: "ok", durationMs: 2 }], complete: true },
				details: { exitCode: 0 },
			}),
		);
		sm.appendMessage(
			system({
				sections: { date: "Today is 2026-11-21.", cwd: null, style: "Be brief." },
				toolsRemoved: [{ name: "bash" }, { name: "read" }],
				toolsAdded: [TOOLS.edit, TOOLS.read2],
			}),
		);
		sm.appendMessage(
			assistant(
				[{ type: "toolCall", id: "call_2", name: "edit", arguments: {}, argumentsError: "expected an object" }],
				{ stopReason: "toolUse", endTurn: false },
			),
		);
		sm.appendMessage(toolResult("call_2", "edit", "Invalid arguments for tool edit", { isError: true }));
		sm.appendMessage(
			assistant([], {
				stopReason: "deferred",
				deferred: { provider: "faux", modelId: "faux-1", api: "faux", id: "batch_7", expiresAt: 1795000000000 },
			}),
		);
		sm.appendUsage("cache_warm", "faux", "faux-1-2026", usage(0, 0, { cacheWrite: 400 }), "keep-alive");
		sm.appendUsage("cache_warm", "faux", "faux-1", usage(1, 0));
		sm._appendEntry({
			type: "future_entry_kind",
			id: "fe000001",
			parentId: sm.getLeafId(),
			timestamp: new Date().toISOString(),
			payload: { anything: [1, 2, 3] },
		});
		sm.appendMessage(system({ content: [{ type: "text", text: "Also: answer in English." }] }));
		sm.appendMessage(user("Thanks."));
		sm.appendMessage(assistant("You're welcome.", { thinkingLevel: "max" }));
	},

	// Context edits: hide and replace, string replacement of assistant/toolResult content,
	// custom messages, the latest edit wins, edits are branch-relative.
	"context-edits"(sm) {
		sm.appendMessage(system({ content: "Be helpful.", toolsAdded: [TOOLS.read] }));
		const u1 = sm.appendMessage(user("First question"));
		const a1 = sm.appendMessage(assistant("A long first answer"));
		const u2 = sm.appendMessage(user("Read x"));
		const a2 = sm.appendMessage(
			assistant([{ type: "toolCall", id: "c1", name: "read", arguments: { path: "x" } }]),
		);
		const t2 = sm.appendMessage(toolResult("c1", "read", "a very long file body"));
		const cm = sm.appendCustomMessageEntry("note", "extension note", true, { k: 1 });
		sm.appendContextEdit(a1, { content: "short answer" });
		sm.appendContextEdit(t2, { content: "[file body elided]" });
		sm.appendContextEdit(cm, { content: [{ type: "text", text: "edited note" }] });
		sm.appendContextEdit(u1, { content: "First question (edited)" });
		sm.appendContextEdit(u1, { content: [{ type: "text", text: "First question, v2" }] });
		const failed = sm.appendMessage(assistant("oops", { stopReason: "error", errorMessage: "boom" }));
		sm.appendContextEdit(failed, null);
		sm.appendMessage(user("Go on"));
		sm.appendMessage(assistant("Going on"));
		// another branch from u2's reply: the edits above (after a2) do not apply there,
		// except the ones on its path
		sm.branch(a2);
		sm.appendMessage(toolResult("c1", "read", "other body"));
		sm.appendContextEdit(u2, null);
		sm.appendMessage(assistant("Done on the other branch"));
		void u2;
	},

	// Compactions: the systemMessage checkpoint, kept entries without their system messages,
	// a later system patch, retain-none, usage on compactions.
	compaction(sm) {
		sm.appendMessage(system({ content: "Base prompt.", sections: { env: "Env v1" }, toolsAdded: [TOOLS.read] }));
		sm.appendMessage(user("one"));
		sm.appendMessage(assistant("reply one"));
		const kept = sm.appendMessage(user("two"));
		sm.appendMessage(system({ sections: { env: "Env v2" }, toolsAdded: [TOOLS.bash] }));
		sm.appendMessage(assistant("reply two"));
		sm.appendCompaction("Summary of one.", kept, 1234, { readFiles: ["x"] }, false, usage(200, 50));
		sm.appendMessage(system({ sections: { extra: "Extra section" } }));
		sm.appendMessage(user("three"));
		sm.appendMessage(assistant("reply three"));
		sm.appendCompaction("Summary of everything.", undefined, 999, undefined, true, usage(300, 60));
		sm.appendMessage(user("four"));
		sm.appendMessage(assistant("reply four"));
	},

	// Branches with summaries (usage on them), labels, names, custom entries, navigation to the
	// first user message (a summary under the leading system message), a reset leaf.
	branches(sm) {
		const sys = sm.appendMessage(system({ content: "Tree prompt.", toolsAdded: [TOOLS.read] }));
		const u1 = sm.appendMessage(user("root question"));
		const a1 = sm.appendMessage(assistant("root answer"));
		sm.appendLabelChange(a1, "checkpoint");
		sm.appendMessage(user("left"));
		sm.appendMessage(assistant("left answer"));
		sm.appendCustomEntry("ext-state", { step: 1 });
		sm.branchWithSummary(a1, "Tried going left.", { files: [] }, false, usage(40, 10));
		sm.appendMessage(user("right"));
		sm.appendMessage(assistant("right answer"));
		sm.appendSessionInfo("  My\nsession  ");
		sm.appendLabelChange(a1, "");
		sm.branchWithSummary(sys, "Came back to the start.", undefined, true);
		sm.appendMessage(user("again from the top"));
		sm.appendMessage(assistant("top answer"));
		sm.appendModelChange("other", "other-2");
		void u1;
	},

	// A leaf moved in memory only: pi reopens at the last line.
	"reopen-last-line"(sm) {
		sm.appendMessage(user("a"));
		const a = sm.appendMessage(assistant("b"));
		sm.appendMessage(user("c"));
		sm.appendMessage(assistant("d"));
		sm.branch(a);
		sm.appendCustomEntry("marker", { note: "a custom entry parented at the target" });
	},
};

// A real AgentSession run with a scripted faux model: pi itself writes the leading system message
// (its prompt sections and tools), the thinking levels, tool durations, and the patch when the
// tools change between two prompts.
async function agentRun(dir) {
	const root = join(tmpdir(), "pi16-golden-agent-run");
	rmSync(root, { recursive: true, force: true });
	const work = join(root, "work");
	mkdirSync(join(root, "agent"), { recursive: true });
	mkdirSync(work, { recursive: true });
	writeFileSync(join(work, "notes.txt"), "line one\nline two\n");
	const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", reasoning: true }] });
	const runtime = await ModelRuntime.create({
		authPath: join(root, "agent", "auth.json"),
		modelsPath: null,
		allowModelNetwork: false,
		refreshOnCreate: false,
	});
	runtime.registerNativeProvider(faux.provider);
	await runtime.setRuntimeApiKey("faux", "scripted-model-needs-no-key");
	const sm = SessionManager.create(work, join(root, "sessions"));
	const { session } = await createAgentSession({
		cwd: work,
		agentDir: join(root, "agent"),
		modelRuntime: runtime,
		model: faux.getModel(),
		thinkingLevel: "high",
		sessionManager: sm,
		tools: ["read"],
		settingsManager: SettingsManager.inMemory(),
	});
	faux.setResponses([
		fauxAssistantMessage([fauxThinking("I will read it."), fauxToolCall("read", { path: "notes.txt" }, { id: "call_r1" })], {
			stopReason: "toolUse",
		}),
		fauxAssistantMessage([fauxText("It has two lines.")]),
		fauxAssistantMessage([fauxText("Now with more tools.")]),
	]);
	await session.prompt("Read notes.txt");
	session.setActiveToolsByName(["read", "bash"]);
	session.setThinkingLevel("low");
	await session.prompt("Anything else?");
	const file = join(dir, "agent-run.jsonl");
	renameSync(sm.getSessionFile(), file);
	rmSync(root, { recursive: true, force: true });
	return file;
}

async function generate() {
	const dir = join(HERE, "pi");
	rmSync(dir, { recursive: true, force: true });
	mkdirSync(dir, { recursive: true });
	let n = 0;
	for (const [name, build] of Object.entries(SCENARIOS)) {
		reset(++n);
		const sm = SessionManager.create("/work/project", dir);
		build(sm);
		const file = join(dir, `${name}.jsonl`);
		renameSync(sm.getSessionFile(), file); // the file exactly as pi wrote it
		writeReading(file);
	}
	reset(++n);
	writeReading(await agentRun(dir));
}

function readAll(dir) {
	for (const name of readdirSync(dir).sort()) {
		if (name.endsWith(".jsonl")) writeReading(join(dir, name));
	}
}

if (process.argv[2] === "read") readAll(process.argv[3]);
else await generate();
