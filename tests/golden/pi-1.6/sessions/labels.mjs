// Labels of white space in pi 1.6, for tests/harness/test_labels_pi16.py:
//
//   node_modules/.bin/node labels.mjs DIR [FILE ...]
//
// pi writes DIR/pi-labels.jsonl (a user message and a reply, the message labelled "   " through
// SessionManager.appendLabelChange), then prints, as JSON, pi's labels of that file and of each
// FILE (getLabel of every entry, and the labels of getTree's nodes) after SessionManager.open.

import { join } from "node:path";

const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const [dir, ...files] = process.argv.slice(2);
const manager = SessionManager.create(dir, dir);
const first = manager.appendMessage({ role: "user", content: "hi", timestamp: 1 });
manager.appendMessage({
	role: "assistant",
	content: [{ type: "text", text: "hello" }],
	api: "faux",
	provider: "faux",
	model: "faux-1",
	usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
	stopReason: "stop",
	timestamp: 2,
});
manager.appendLabelChange(first, "   ");
const written = join(dir, "pi-labels.jsonl");
const { renameSync } = await import("node:fs");
renameSync(manager.getSessionFile(), written);

function labels(file) {
	const opened = SessionManager.open(file);
	const byEntry = {};
	for (const entry of opened.getEntries()) {
		const label = opened.getLabel(entry.id);
		if (label !== undefined) byEntry[entry.id] = label;
	}
	const inTree = {};
	const walk = (node) => {
		if (node.label !== undefined) inTree[node.entry.id] = node.label;
		node.children.forEach(walk);
	};
	opened.getTree().forEach(walk);
	return { labels: byEntry, tree: inTree };
}

const out = { [written]: labels(written) };
for (const file of files) out[file] = labels(file);
console.log(JSON.stringify(out));
