// The messages pi-ai 1.6's openai-completions provider sends for a transcript with a system
// message in mid-conversation, for tests/ai/test_openai_completions_system_pi16.py:
//
//   node_modules/.bin/node system-role.mjs      writes requests/openai-completions-system.json
//
// Each case gives a model (its provider, base URL, reasoning flag and compat) and the transcript;
// pi's request body is taken from `onPayload` (the request itself goes nowhere: port 9 refuses).

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const { stream } = await import("@earendil-works/pi-ai/api/openai-completions");

const READ = {
	name: "read",
	description: "Read a file",
	parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const GREP = {
	name: "grep",
	description: "Search files",
	parameters: { type: "object", properties: { pattern: { type: "string" } }, required: ["pattern"] },
};
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const reply = (content, stopReason = "stop") => ({
	role: "assistant",
	content,
	api: "openai-completions",
	provider: "local",
	model: "m",
	usage,
	stopReason,
	timestamp: 2,
});

const TRANSCRIPTS = {
	"section-update": [
		{ role: "system", content: "You are pi.", sections: { cwd: "<cwd>/work</cwd>" }, toolsAdded: [READ], timestamp: 1 },
		{ role: "user", content: "hi", timestamp: 1 },
		reply([{ type: "text", text: "hello" }]),
		{ role: "system", content: "Be brief.", sections: { date: "Today is Friday.", cwd: null }, timestamp: 3 },
		{ role: "user", content: "again", timestamp: 4 },
	],
	"between-a-call-and-its-result": [
		{ role: "system", content: "You are pi.", toolsAdded: [READ], timestamp: 1 },
		{ role: "user", content: "read it", timestamp: 1 },
		reply([{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "a" } }], "toolUse"),
		{ role: "system", content: "", sections: { note: "A note." }, toolsAdded: [GREP], timestamp: 3 },
		{ role: "toolResult", toolCallId: "call_1", toolName: "read", content: [{ type: "text", text: "A" }], isError: false, timestamp: 4 },
	],
};

const MODELS = {
	"local-default": { provider: "local", baseUrl: "http://127.0.0.1:9/v1", reasoning: false },
	"local-mid-convo": { provider: "local", baseUrl: "http://127.0.0.1:9/v1", reasoning: false, compat: { supportsMidConvoSystemMessages: true } },
	"local-reasoning-mid-convo": { provider: "local", baseUrl: "http://127.0.0.1:9/v1", reasoning: true, compat: { supportsMidConvoSystemMessages: true } },
	"openai-reasoning-mid-convo": { provider: "openai", baseUrl: "http://127.0.0.1:9/v1", reasoning: true, compat: { supportsMidConvoSystemMessages: true } },
};

const cases = [];
for (const [modelName, fields] of Object.entries(MODELS)) {
	for (const [transcriptName, messages] of Object.entries(TRANSCRIPTS)) {
		const model = {
			id: "m",
			name: "m",
			api: "openai-completions",
			input: ["text"],
			cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
			contextWindow: 8192,
			maxTokens: 512,
			...fields,
		};
		let body;
		const events = stream(model, { messages }, {
			apiKey: "none",
			maxRetries: 0,
			onPayload: (params) => {
				body = params;
				throw new Error("captured");
			},
		});
		for await (const _ of events) {
		}
		cases.push({
			model: modelName,
			transcript: transcriptName,
			modelFields: fields,
			messages: body.messages,
			tools: (body.tools ?? []).map((t) => t.function.name),
		});
	}
}
mkdirSync(join(HERE, "requests"), { recursive: true });
writeFileSync(join(HERE, "requests", "openai-completions-system.json"), `${JSON.stringify({ transcripts: TRANSCRIPTS, cases }, null, 1)}\n`);
process.stderr.write(`${cases.length} cases\n`);
