// What pi 1.6 does with an entry whose write failed, for tests/harness/test_write_failure_pi16.py:
//
//   node_modules/.bin/node write-failure.mjs DIR
//
// pi writes a session in DIR, then its file is made unwritable (replaced by a directory) and pi
// appends one more message: the append throws, and pi drops the entry from memory (its
// `_appendEntry` rolls back). Prints, as JSON, the error and pi's entries and leaf afterwards.

import { rmSync, mkdirSync } from "node:fs";

import { smallSession } from "./small-session.mjs";

const [dir] = process.argv.slice(2);
const { manager, reply: kept } = smallSession(dir);
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
