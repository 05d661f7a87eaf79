// The run view's state as the kernel sends it, with a finished reply's usage: the base the
// run view's tests change what they test.
export const USAGE = { input: 1200, output: 340, cache_read: 0, cache_write: 0, total_tokens: 1540, cost: 0.0123 };

export function baseState(overrides = {}) {
  return {
    status: "waiting",
    header: { model: "faux/faux-1", thinking_level: "off", usage: { ...USAGE }, context_tokens: 1540, context_window: 10_000, answers_only: false, compaction: "" },
    messages: [],
    current: {},
    stalled_ms: 0,
    patch_seq: 0,
    running_tools: {},
    queued: [],
    notice: "",
    error: "",
    controls: { stop: true, steer: true, follow_up: true, tree: true },
    ...overrides,
  };
}
