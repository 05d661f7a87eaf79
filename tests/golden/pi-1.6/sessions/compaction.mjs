// Records how pi 1.6 sizes a session's context when it decides whether to compact, for every
// session file committed here (pi/*.jsonl that pi wrote, ours/*.jsonl that pi_notebook wrote),
// with the leaf at every entry of each file in turn.
//
//   node_modules/.bin/node compaction.mjs
//
// writes compaction-estimates.json: per file and leaf entry, pi-coding-agent 1.6.0's
// estimateProjectedContextTokens(projection, branch) — the usage of the last assistant reply plus
// an estimate of the messages after it, unless a context edit or a compaction came after that
// reply, then a pure estimate (the replayed system message once plus every other message) — and
// estimateContextTokens of the same messages, with shouldCompact on both sides of the threshold.
// Reading files writes nothing and needs no clock or ids; reruns give the same bytes.
// tests/harness/test_compaction_pi16.py replays it.

import { readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const { SessionManager, shouldCompact, DEFAULT_COMPACTION_SETTINGS } = await import(
	"@earendil-works/pi-coding-agent"
);
// not exported from the package's index: imported from its file
const { estimateContextTokens, estimateProjectedContextTokens } = await import(
	pathToFileURL(join(HERE, "node_modules/@earendil-works/pi-coding-agent/dist/core/compaction/compaction.js")).href
);

const settings = DEFAULT_COMPACTION_SETTINGS;
const out = {};
for (const dir of ["pi", "ours"]) {
	for (const name of readdirSync(join(HERE, dir)).sort()) {
		if (!name.endsWith(".jsonl")) continue;
		const manager = SessionManager.open(join(HERE, dir, name));
		const entries = manager.getEntries();
		const fileLeaf = manager.getLeafId();
		const leaves = entries.map((e) => e.id); // the leaf at every entry in turn
		const readings = {};
		for (const leaf of leaves) {
			manager.branch(leaf);
			const projection = manager.buildSessionProjection();
			const projected = estimateProjectedContextTokens(projection, manager.getBranch());
			const plain = estimateContextTokens(projection.messages);
			const window = projected.tokens + settings.reserveTokens;
			readings[leaf] = {
				projected,
				plain,
				// at the threshold (not above it) and one token above it
				compactAtWindow: shouldCompact(projected.tokens, window, settings),
				compactAtWindowMinusOne: shouldCompact(projected.tokens, window - 1, settings),
			};
		}
		out[`${dir}/${name}`] = { fileLeaf, settings, readings };
	}
}
writeFileSync(join(HERE, "compaction-estimates.json"), `${JSON.stringify(out, null, 1)}\n`);
console.log(Object.keys(out).length, "files");
