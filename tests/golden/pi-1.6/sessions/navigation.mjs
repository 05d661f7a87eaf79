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

import { reset } from "./deterministic.mjs"; // first: before pi is imported
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

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
