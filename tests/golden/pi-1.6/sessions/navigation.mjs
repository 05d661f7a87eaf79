// Ground truth for navigating the session tree in pi 1.6: a real AgentSession (pi-coding-agent
// 1.6.0, scripted faux model, no network) answers two prompts at thinking levels "high" then
// "low", navigates back to the first user message with a branch summary, prompts, navigates to
// the first reply without one, and prompts again.
//
//   node_modules/.bin/node navigation.mjs
//
// writes navigation/navigation.jsonl (the session file as pi wrote it) and
// navigation/navigation.json: how many lines the file had before the first navigation, and each
// step after it with the ids pi used. tests/harness/test_navigation_pi16.py opens the first part
// in pi_notebook's AgentHarness, repeats the steps and compares what it appends with pi's lines.

import nodeCrypto from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

// --- determinism: a fake clock and seeded randomness ---------------------------------------------

const RealDate = Date;
const START = RealDate.UTC(2026, 10, 20, 12, 0, 0);
let clock = START;
class FakeDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) {
			clock += 1000;
			super(clock);
		} else {
			super(...args);
		}
	}
	static now() {
		clock += 1000;
		return clock;
	}
}
globalThis.Date = FakeDate;
let perf = 0;
performance.now = () => (perf += 5); // tool and reply durations

let seed = 1;
function random() {
	// mulberry32
	seed = (seed + 0x6d2b79f5) | 0;
	let t = seed;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function fill(bytes) {
	for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
	return bytes;
}
nodeCrypto.randomUUID = () => {
	const b = fill(new Uint8Array(16));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
syncBuiltinESMExports();
Object.defineProperty(globalThis.crypto, "getRandomValues", { value: fill, configurable: true });

function reset(n) {
	clock = START + n * 86_400_000;
	seed = n;
	perf = 0;
}

const { ModelRuntime, SessionManager, SettingsManager, createAgentSession } = await import(
	"@earendil-works/pi-coding-agent"
);
const { fauxAssistantMessage, fauxProvider, fauxText } = await import("@earendil-works/pi-ai");

reset(20);
const root = join(tmpdir(), "pi16-golden-navigation");
rmSync(root, { recursive: true, force: true });
const work = join(root, "work");
mkdirSync(join(root, "agent"), { recursive: true });
mkdirSync(work, { recursive: true });
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
	tools: [],
	settingsManager: SettingsManager.inMemory(),
});
const REPLIES = {
	first: "First answer.",
	second: "Second answer.",
	summary: "## Goal\nThe user asked a second question.",
	third: "Third answer.",
	fourth: "Fourth answer.",
};
faux.setResponses([
	fauxAssistantMessage([fauxText(REPLIES.first)]),
	fauxAssistantMessage([fauxText(REPLIES.second)]),
	fauxAssistantMessage([fauxText(REPLIES.summary)]),
	fauxAssistantMessage([fauxText(REPLIES.third)]),
	fauxAssistantMessage([fauxText(REPLIES.fourth)]),
]);
const entries = () => sm.getEntries();
const find = (role, text) =>
	entries().find((e) => e.type === "message" && e.message.role === role && JSON.stringify(e.message.content).includes(text));

await session.prompt("First question");
session.setThinkingLevel("low");
await session.prompt("Second question");
const prefixEntries = entries().length;
const firstUser = find("user", "First question").id;
const firstReply = find("assistant", REPLIES.first).id;
const steps = [];
let result = await session.navigateTree(firstUser, { summarize: true });
steps.push({ step: "navigate", targetId: firstUser, summarize: true, editorText: result.editorText, leafId: sm.getLeafId() });
await session.prompt("Third question");
steps.push({ step: "prompt", text: "Third question", reply: REPLIES.third, leafId: sm.getLeafId() });
result = await session.navigateTree(firstReply, {});
steps.push({ step: "navigate", targetId: firstReply, summarize: false, editorText: result.editorText ?? null, leafId: sm.getLeafId() });
await session.prompt("Fourth question");
steps.push({ step: "prompt", text: "Fourth question", reply: REPLIES.fourth, leafId: sm.getLeafId() });

const dir = join(HERE, "navigation");
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const text = readFileSync(sm.getSessionFile(), "utf8");
writeFileSync(join(dir, "navigation.jsonl"), text);
const record = { prefixLines: prefixEntries + 1, thinkingLevel: session.thinkingLevel, replies: REPLIES, steps };
writeFileSync(join(dir, "navigation.json"), `${JSON.stringify(record, null, 1)}\n`);
rmSync(root, { recursive: true, force: true });
console.log(text.split("\n").length - 1, "lines,", prefixEntries, "entries before navigating");
