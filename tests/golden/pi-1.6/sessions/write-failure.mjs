// What pi 1.6 does with an entry whose write failed, for tests/harness/test_write_failure_pi16.py:
//
//   node_modules/.bin/node write-failure.mjs DIR
//
// pi writes a session in DIR, then its file is made unwritable (replaced by a directory) and pi
// appends one more message: the append throws, and pi drops the entry from memory (its
// `_appendEntry` rolls back). Prints, as JSON, the error and pi's entries and leaf afterwards.

import { rmSync, mkdirSync } from "node:fs";

const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const [dir] = process.argv.slice(2);
const manager = SessionManager.create(dir, dir);
const reply = (text) => ({
	role: "assistant",
	content: [{ type: "text", text }],
	api: "faux",
	provider: "faux",
	model: "faux-1",
	usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
	stopReason: "stop",
	timestamp: 2,
});
manager.appendMessage({ role: "user", content: "hi", timestamp: 1 });
const kept = manager.appendMessage(reply("hello"));
const file = manager.getSessionFile();
rmSync(file);
mkdirSync(file);
let error = null;
try {
	manager.appendMessage({ role: "user", content: "lost?", timestamp: 3 });
} catch (e) {
	error = e.code ?? String(e);
}
console.log(
	JSON.stringify({
		error,
		entries: manager.getEntries().map((e) => e.message?.content ?? e.type),
		leafIsLastWritten: manager.getLeafId() === kept,
	}),
);
