// Labels of white space in pi 1.6, for tests/harness/test_labels_pi16.py:
//
//   node_modules/.bin/node labels.mjs DIR [FILE ...]
//
// pi writes DIR/pi-labels.jsonl (a user message and a reply, the message labelled "   " through
// SessionManager.appendLabelChange), then prints, as JSON, pi's labels of that file and of each
// FILE (getLabel of every entry, and the labels of getTree's nodes) after SessionManager.open.

import { join } from "node:path";

import { smallSession } from "./small-session.mjs";

const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const [dir, ...files] = process.argv.slice(2);
const { manager, question: first } = smallSession(dir);
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
