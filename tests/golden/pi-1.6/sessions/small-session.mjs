// A two-message session pi writes itself (a user message, a faux reply), for the small live
// checks (labels.mjs, write-failure.mjs). Returns the manager and the two entry ids.

const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2 };
usage.cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };

export function smallSession(dir) {
	const manager = SessionManager.create(dir, dir);
	const question = manager.appendMessage({ role: "user", content: "hi", timestamp: 1 });
	const reply = manager.appendMessage({
		role: "assistant",
		content: [{ type: "text", text: "hello" }],
		api: "faux",
		provider: "faux",
		model: "faux-1",
		usage,
		stopReason: "stop",
		timestamp: 2,
	});
	return { manager, question, reply };
}
