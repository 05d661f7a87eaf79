// Records the agent-event scenarios with the real @earendil-works/pi-agent-core 1.6.0.
//
//   cd tests/golden/pi-1.6/agent && npm ci && node_modules/.bin/node generate.mjs
//
// writes agent-events.jsonl (every event with its payload, the model calls, hook calls and the
// final state) and agent-events.compact.jsonl (one line per scenario: the compact sequence and
// the final roles). The model side is scripted in-process (no network): the 28 scenarios of
// ../../agent-events.jsonl (pi 0.73.1) replay the deltas recorded there; the scenarios for the
// pi 1.6 hooks script their replies below. tests/agent/test_agent_golden_16.py replays them all.

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Agent } from "@earendil-works/pi-agent-core";
import {
  createAssistantMessageEventStream,
  createFauxCore,
  fauxAssistantMessage,
  fauxToolCall,
  getCurrentTools,
  parseStreamingJson,
} from "@earendil-works/pi-ai";

const HERE = dirname(fileURLToPath(import.meta.url));
const OLD = readFileSync(join(HERE, "../../agent-events.jsonl"), "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line));

const MODEL = {
  id: "scripted",
  name: "Scripted",
  api: "scripted",
  provider: "scripted",
  baseUrl: "",
  reasoning: true,
  input: ["text"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 100000,
  maxTokens: 8192,
};
const ZERO_USAGE = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const CONTENT_CHARS = 80; // the 0.73 recorder kept this much of each message's flattened content

// --- scripted replies ----------------------------------------------------------------------------

/** The replies of a 0.73 scenario's model calls: deltas, stop reason, error, rendered blocks. */
function recordedReplies(scenario) {
  const replies = [];
  let current = null;
  for (const row of OLD) {
    if (row.scenario !== scenario) continue;
    if (row.kind === "llm_call") current = [];
    else if (row.kind === "event" && current !== null) {
      if (row.type === "message_update") {
        current.push([row.assistantMessageEvent, row.contentIndex, row.delta ?? ""]);
      } else if (row.type === "message_end" && row.message.role === "assistant") {
        const m = row.message;
        replies.push({
          deltas: current,
          stopReason: m.stopReason,
          errorMessage: m.errorMessage,
          blocks: m.content ? m.content.split("|") : [],
        });
        current = null;
      }
    }
  }
  return replies;
}

function chunks(text, size = 4) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

/** A reply built from blocks: ["text", s] | ["thinking", s] | ["toolCall", name, id, args]. */
function scriptedReply(blocks, stopReason) {
  const deltas = [];
  const rendered = [];
  blocks.forEach((block, index) => {
    if (block[0] === "text") {
      deltas.push(["text_start", index, ""]);
      for (const c of chunks(block[1])) deltas.push(["text_delta", index, c]);
      deltas.push(["text_end", index, ""]);
      rendered.push(block[1]);
    } else if (block[0] === "thinking") {
      deltas.push(["thinking_start", index, ""]);
      for (const c of chunks(block[1])) deltas.push(["thinking_delta", index, c]);
      deltas.push(["thinking_end", index, ""]);
      rendered.push(`[thinking:${block[1]}]`);
    } else {
      const [, name, id, args] = block;
      deltas.push(["toolcall_start", index, ""]);
      for (const c of chunks(JSON.stringify(args), 8)) deltas.push(["toolcall_delta", index, c]);
      deltas.push(["toolcall_end", index, ""]);
      rendered.push(`[toolCall:${name}:${id}]`);
    }
  });
  const stop = stopReason ?? (blocks.some((b) => b[0] === "toolCall") ? "toolUse" : "stop");
  return { deltas, stopReason: stop, blocks: rendered };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Stream one scripted reply as pi-ai events with partial messages, as a provider would. */
function play(reply, model, options) {
  const stream = createAssistantMessageEventStream();
  const message = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: structuredClone(ZERO_USAGE),
    stopReason: "stop",
    timestamp: Date.now(),
  };
  const snapshot = () => structuredClone(message);
  const signal = options?.signal;
  const fail = (stopReason, errorMessage) => {
    message.stopReason = stopReason;
    message.errorMessage = errorMessage;
    stream.push({ type: "error", reason: stopReason, error: snapshot() });
  };
  (async () => {
    if (reply.deltas.length === 0 && reply.stopReason === "error") {
      fail("error", reply.errorMessage ?? "error");
      return;
    }
    stream.push({ type: "start", partial: snapshot() });
    const raw = {};
    for (const [kind, index, delta] of reply.deltas) {
      await tick(); // a chunk boundary: listeners run before the next delta
      if (signal?.aborted) break;
      if (kind === "text_start") message.content[index] = { type: "text", text: "" };
      else if (kind === "thinking_start") message.content[index] = { type: "thinking", thinking: "" };
      else if (kind === "toolcall_start") {
        const [, name, id] = reply.blocks[index].match(/^\[toolCall:([^:]+):([^\]]+)\]$/);
        message.content[index] = { type: "toolCall", id, name, arguments: {} };
        raw[index] = "";
      } else if (kind === "text_delta") message.content[index].text += delta;
      else if (kind === "thinking_delta") message.content[index].thinking += delta;
      else if (kind === "toolcall_delta") {
        raw[index] += delta;
        message.content[index].arguments = parseStreamingJson(raw[index]);
      }
      const event = { type: kind, contentIndex: index, partial: snapshot() };
      if (kind.endsWith("_delta")) event.delta = delta;
      if (kind === "text_end") event.content = message.content[index].text;
      if (kind === "thinking_end") event.content = message.content[index].thinking;
      if (kind === "toolcall_end") event.toolCall = message.content[index];
      stream.push(event);
    }
    if (reply.stopReason === "aborted" || signal?.aborted) {
      if (!signal?.aborted) {
        await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
      }
      fail("aborted", "Request was aborted");
    } else if (reply.stopReason === "error") {
      fail("error", reply.errorMessage ?? "error");
    } else {
      message.stopReason = reply.stopReason;
      stream.push({ type: "done", reason: reply.stopReason, message: snapshot() });
    }
  })();
  return stream;
}

// --- rendering in the golden notation ------------------------------------------------------------

function textOf(content) {
  if (typeof content === "string") return content;
  return (content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
}

function renderMessage(m) {
  if (m.role === "assistant") {
    const parts = m.content.map((b) =>
      b.type === "text"
        ? b.text
        : b.type === "thinking"
          ? `[thinking:${b.thinking}]`
          : `[toolCall:${b.name}:${b.id}]`,
    );
    const out = { role: "assistant", stopReason: m.stopReason };
    if (m.errorMessage) out.errorMessage = m.errorMessage;
    out.content = parts.join("|").slice(0, CONTENT_CHARS);
    if (m.thinkingLevel !== undefined) out.thinkingLevel = m.thinkingLevel;
    return out;
  }
  if (m.role === "toolResult") {
    return {
      role: "toolResult",
      toolCallId: m.toolCallId,
      isError: m.isError,
      content: textOf(m.content).slice(0, CONTENT_CHARS),
      timed: typeof m.durationMs === "number",
    };
  }
  if (m.role === "system") {
    const out = { role: "system", content: textOf(m.content) };
    if (m.sections) out.sections = m.sections;
    if (m.toolsAdded) out.toolsAdded = m.toolsAdded.map((t) => t.name);
    if (m.toolsRemoved) out.toolsRemoved = m.toolsRemoved.map((t) => t.name);
    return out;
  }
  return { role: m.role, content: textOf(m.content).slice(0, CONTENT_CHARS) };
}

function roleLabel(m) {
  return m.role === "assistant" ? `assistant:${m.stopReason}` : m.role;
}

function token(event) {
  const t = event.type;
  if (t === "message_start" || t === "message_end") {
    const m = event.message;
    let label = m.role;
    if (m.role === "assistant") label = t === "message_end" ? roleLabel(m) : "assistant";
    else if (m.role === "toolResult") label = `toolResult:${m.toolCallId}`;
    return `${t}(${label})`;
  }
  if (t === "tool_execution_start" || t === "tool_execution_update") return `${t}(${event.toolCallId})`;
  if (t === "tool_execution_end") return `${t}(${event.toolCallId}${event.isError ? ":error" : ""})`;
  return t;
}

function eventRow(event) {
  const row = { type: event.type };
  switch (event.type) {
    case "message_start":
    case "message_end":
      row.message = renderMessage(event.message);
      break;
    case "message_update":
      row.assistantMessageEvent = event.assistantMessageEvent.type;
      row.contentIndex = event.assistantMessageEvent.contentIndex;
      if (event.assistantMessageEvent.delta !== undefined) row.delta = event.assistantMessageEvent.delta;
      break;
    case "turn_end":
      row.message = renderMessage(event.message);
      row.toolResults = event.toolResults.map((r) => r.toolCallId);
      break;
    case "agent_end":
      row.messages = event.messages.map((m) =>
        m.role === "assistant" ? `assistant(${m.stopReason})` : m.role,
      );
      break;
    case "tool_execution_start":
      Object.assign(row, { toolCallId: event.toolCallId, toolName: event.toolName, args: event.args });
      break;
    case "tool_execution_update":
      Object.assign(row, { toolCallId: event.toolCallId, partial: textOf(event.partialResult.content) });
      break;
    case "tool_execution_end":
      Object.assign(row, {
        toolCallId: event.toolCallId,
        isError: event.isError,
        result: textOf(event.result.content),
        timed: typeof event.durationMs === "number",
      });
      if (event.result.terminate) row.terminate = true;
      break;
  }
  return row;
}

class Recorder {
  constructor(scenario, replies) {
    this.scenario = scenario;
    this.replies = [...replies];
    this.rows = [];
    this.tokens = [];
    this.events = 0;
    this.calls = 0;
    this.listener = (event) => {
      this.rows.push({ kind: "event", scenario, i: this.events++, ...eventRow(event) });
      this.tokens.push(event.type === "message_update" ? null : token(event));
    };
    this.streamFn = (model, context, options) => {
      this.rows.push({
        kind: "llm_call",
        scenario,
        call: this.calls++,
        roles: context.messages.map((m) => m.role),
        // the tools this request declares to the model (replayed from its system messages)
        tools: getCurrentTools(context.messages).map((t) => t.name),
        model: model.id,
        reasoning: options?.reasoning ?? null,
      });
      this.tokens.push("<LLM>");
      const reply = this.replies.shift();
      if (!reply) throw new Error(`${scenario}: no scripted reply left`);
      return play(reply, model, options);
    };
  }

  note(text) {
    this.rows.push({ kind: "note", scenario: this.scenario, text });
    this.tokens.push(`<note:${text}>`);
  }

  hook(name, detail) {
    this.rows.push({ kind: "hook", scenario: this.scenario, name, detail: detail ?? null });
    this.tokens.push(detail === undefined ? `<hook:${name}>` : `<hook:${name}:${detail}>`);
  }

  agent(options = {}) {
    const { initialState = {}, ...rest } = options;
    const agent = new Agent({
      streamFn: this.streamFn,
      ...rest,
      initialState: { model: MODEL, ...initialState },
    });
    agent.subscribe(this.listener);
    return agent;
  }

  compact() {
    const out = [];
    let updates = 0;
    for (const t of this.tokens) {
      if (t === null) {
        updates++;
        continue;
      }
      if (updates) out.push(`message_update x${updates}`);
      updates = 0;
      out.push(t);
    }
    if (updates) out.push(`message_update x${updates}`);
    return out.join(" > ");
  }
}

// --- tools ---------------------------------------------------------------------------------------

const schema = (properties, required) => ({ type: "object", properties, required });
const textResult = (text, terminate) => ({
  content: [{ type: "text", text }],
  details: {},
  ...(terminate ? { terminate: true } : {}),
});

const ECHO = {
  name: "echo",
  label: "echo",
  description: "Echo the text back.",
  parameters: schema({ text: { type: "string" } }, ["text"]),
  execute: async (_id, params) => textResult(`echo:${params.text}`),
};
const COUNT = {
  name: "count",
  label: "count",
  description: "Count to n.",
  parameters: schema({ n: { type: "integer", minimum: 1 } }, ["n"]),
  execute: async (_id, params) =>
    textResult(`counted to ${params.n} (${typeof params.n === "number" ? "number" : "string"})`),
};
const SLEEP = {
  name: "sleep",
  label: "sleep",
  description: "Sleep for ms milliseconds.",
  parameters: schema({ ms: { type: "integer" }, terminate: { type: "boolean" } }, ["ms"]),
  execute: async (_id, params, signal, onUpdate) => {
    onUpdate?.(textResult(`sleeping ${params.ms}`));
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, params.ms);
      signal?.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          reject(new Error("sleep aborted"));
        },
        { once: true },
      );
    });
    return textResult(`slept ${params.ms}`, params.terminate === true);
  },
};
const BOOM = {
  name: "boom",
  label: "boom",
  description: "Always fails.",
  parameters: schema({}, []),
  execute: async () => {
    throw new Error("boom: tool failed");
  },
};

// --- the 0.73 scenarios, re-run -------------------------------------------------------------------

const PROMPTS = {
  text: "hi",
  "tool-then-text": "please echo hi",
  "two-tools-parallel": "sleep twice",
  "two-tools-sequential": "sleep twice",
  "tool-throws": "explode",
  "invalid-args": "bad args",
  "coerced-args": "coerce",
  "coerced-null": "null text",
  "invalid-args-range": "count to zero",
  "coerced-integer": "count to seven",
  "unknown-tool": "call a missing tool",
  "before-tool-call-block": "block echo",
  "after-tool-call-override": "override",
  "terminate-all": "terminate",
  "terminate-partial": "terminate one",
  "provider-error": "hi",
  "provider-error-before-start": "hi",
};

const SCENARIOS = {};

for (const name of [
  "text",
  "tool-then-text",
  "tool-throws",
  "invalid-args",
  "coerced-args",
  "coerced-null",
  "invalid-args-range",
  "coerced-integer",
  "unknown-tool",
  "terminate-all",
  "terminate-partial",
  "provider-error",
  "provider-error-before-start",
]) {
  SCENARIOS[name] = async (rec) => {
    const agent = rec.agent({ initialState: { tools: [ECHO, COUNT, SLEEP, BOOM] } });
    await agent.prompt(PROMPTS[name]);
    return agent;
  };
}

for (const name of ["two-tools-parallel", "two-tools-sequential"]) {
  SCENARIOS[name] = async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [SLEEP] },
      toolExecution: name.endsWith("sequential") ? "sequential" : "parallel",
    });
    await agent.prompt(PROMPTS[name]);
    return agent;
  };
}

SCENARIOS["before-tool-call-block"] = async (rec) => {
  const agent = rec.agent({
    initialState: { tools: [ECHO, SLEEP] },
    beforeToolCall: async (ctx) =>
      ctx.toolCall.name === "echo" ? { block: true, reason: "echo is not allowed here" } : undefined,
  });
  await agent.prompt(PROMPTS["before-tool-call-block"]);
  return agent;
};

SCENARIOS["after-tool-call-override"] = async (rec) => {
  const agent = rec.agent({
    initialState: { tools: [ECHO] },
    afterToolCall: async (ctx) => ({
      content: [{ type: "text", text: `redacted(${textOf(ctx.result.content).length} chars)` }],
      isError: true,
    }),
  });
  await agent.prompt(PROMPTS["after-tool-call-override"]);
  return agent;
};

for (const name of ["steer-one-at-a-time", "steer-all"]) {
  SCENARIOS[name] = async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [SLEEP] },
      steeringMode: name === "steer-all" ? "all" : "one-at-a-time",
    });
    agent.subscribe((event) => {
      if (event.type === "tool_execution_update" && event.toolCallId === "call_1") {
        agent.steer({ role: "user", content: "steer A", timestamp: Date.now() });
        agent.steer({ role: "user", content: "steer B", timestamp: Date.now() });
      }
    });
    await agent.prompt("work");
    return agent;
  };
}

SCENARIOS["steer-during-text"] = async (rec) => {
  const agent = rec.agent();
  const unsubscribe = agent.subscribe((event) => {
    if (event.type === "message_update") {
      agent.steer({ role: "user", content: "actually, do X", timestamp: Date.now() });
      unsubscribe();
    }
  });
  await agent.prompt("question");
  return agent;
};

SCENARIOS["follow-up"] = async (rec) => {
  const agent = rec.agent({ initialState: { tools: [ECHO] } });
  agent.subscribe((event) => {
    if (event.type === "tool_execution_start") {
      agent.followUp({ role: "user", content: "and then this", timestamp: Date.now() });
    }
  });
  await agent.prompt("start");
  return agent;
};

SCENARIOS["abort-streaming"] = async (rec) => {
  const agent = rec.agent();
  let deltas = 0;
  agent.subscribe((event) => {
    if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
      if (++deltas === 3) agent.abort();
    }
  });
  await agent.prompt("talk");
  return agent;
};

SCENARIOS["abort-during-tool"] = async (rec) => {
  const agent = rec.agent({ initialState: { tools: [SLEEP] } });
  agent.subscribe((event) => {
    if (event.type === "tool_execution_update") agent.abort();
  });
  await agent.prompt("sleep");
  return agent;
};

SCENARIOS.continue = async (rec) => {
  const agent = rec.agent({
    initialState: { messages: [{ role: "user", content: "pending question", timestamp: 0 }] },
  });
  await agent.continue();
  return agent;
};

SCENARIOS["prompt-while-busy"] = async (rec) => {
  const agent = new Agent({ streamFn: rec.streamFn, initialState: { model: MODEL } });
  agent.subscribe(async (event) => {
    rec.listener(event);
    if (event.type === "agent_start") {
      try {
        await agent.prompt("two");
      } catch (error) {
        rec.note(error.message);
      }
    }
  });
  await agent.prompt("one");
  return agent;
};

function fauxAgent(rec, tokenSize, responses, tools = []) {
  // Paced chunks (a timer each, as 0.73's faux provider had), so listeners see every delta
  // before the next one: with microtask pacing the faux stream runs ahead of an abort.
  const faux = createFauxCore({ tokenSize: { min: tokenSize, max: tokenSize }, tokensPerSecond: 4000 });
  faux.setResponses(responses);
  const agent = new Agent({
    streamFn: faux.streamSimple,
    initialState: { model: faux.getModel(), tools },
  });
  agent.subscribe(rec.listener);
  return agent;
}

SCENARIOS["faux-provider"] = async (rec) => {
  const agent = fauxAgent(
    rec,
    2,
    [
      fauxAssistantMessage([fauxToolCall("echo", { text: "hi" }, { id: "call_1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage("Echo said hi."),
    ],
    [ECHO],
  );
  await agent.prompt("please echo hi");
  return agent;
};

SCENARIOS["faux-abort"] = async (rec) => {
  const agent = fauxAgent(rec, 1, [fauxAssistantMessage("this is a long faux reply that goes on")]);
  let deltas = 0;
  agent.subscribe((event) => {
    if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
      if (++deltas === 5) agent.abort();
    }
  });
  await agent.prompt("talk");
  return agent;
};

SCENARIOS["streamfn-throws"] = async (rec) => {
  const agent = rec.agent({
    streamFn: () => {
      throw new Error("stream function exploded");
    },
  });
  await agent.prompt("hi");
  return agent;
};

// --- scenarios for the pi 1.6 loop hooks ----------------------------------------------------------

const NEW = {};
const echoThenText = () => [
  scriptedReply([["toolCall", "echo", "call_1", { text: "hi" }]]),
  scriptedReply([["text", "Echo said hi."]]),
];

NEW["prepare-request"] = {
  replies: echoThenText,
  run: async (rec) => {
    let requests = 0;
    const agent = rec.agent({
      initialState: { tools: [ECHO], thinkingLevel: "low" },
      prepareRequest: async (request) => {
        requests++;
        // count what is not a system message (the leading one declares the tools)
        const counted = request.context.messages.filter((m) => m.role !== "system").length;
        rec.hook("prepare_request", `${request.thinkingLevel}:${counted}`);
        return requests === 2 ? { thinkingLevel: "high" } : undefined;
      },
    });
    await agent.prompt("please echo hi");
    return agent;
  },
};

NEW["finish-turn-end"] = {
  replies: echoThenText,
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      finishTurn: async (turn) => {
        rec.hook("finish_turn", `${turn.message.stopReason}:${turn.toolResults.length}`);
        return { action: "end" };
      },
    });
    await agent.prompt("please echo hi");
    return agent;
  },
};

NEW["finish-turn-continue"] = {
  replies: () => [scriptedReply([["text", "first"]]), scriptedReply([["text", "second"]])],
  run: async (rec) => {
    let turns = 0;
    const agent = rec.agent({
      finishTurn: async (turn) => {
        turns++;
        rec.hook("finish_turn", `${turn.message.stopReason}:${turns}`);
        return turns === 1 ? { action: "continue" } : undefined;
      },
    });
    await agent.prompt("go on");
    return agent;
  },
};

NEW["finish-turn-continue-with-tools"] = {
  replies: echoThenText,
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      finishTurn: async (turn) => {
        rec.hook("finish_turn", turn.message.stopReason);
        return turn.toolResults.length ? { action: "continue" } : undefined;
      },
    });
    await agent.prompt("please echo hi");
    return agent;
  },
};

NEW["finish-turn-on-error"] = {
  replies: () => [{ ...scriptedReply([["text", "par"]]), stopReason: "error", errorMessage: "529 overloaded" }],
  run: async (rec) => {
    const agent = rec.agent({
      finishTurn: async (turn) => {
        rec.hook("finish_turn", turn.message.stopReason);
        return { action: "continue" };
      },
    });
    await agent.prompt("hi");
    return agent;
  },
};

NEW["prepare-next-turn"] = {
  replies: echoThenText,
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      prepareNextTurnWithContext: async (turn) => {
        rec.hook("prepare_next_turn", `${turn.message.stopReason}:${turn.toolResults.length}`);
        return { messages: [{ role: "user", content: "note from prepare", timestamp: 0 }] };
      },
    });
    await agent.prompt("please echo hi");
    return agent;
  },
};

NEW["length-with-tool-calls"] = {
  replies: () => [
    scriptedReply(
      [
        ["text", "Let me"],
        ["toolCall", "echo", "call_1", { text: "cut" }],
        ["toolCall", "echo", "call_2", { text: "of" }],
      ],
      "length",
    ),
    scriptedReply([["text", "Re-issued."]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { tools: [ECHO] } });
    await agent.prompt("echo twice");
    return agent;
  },
};

// Abort with calls of the reply not started yet: each still gets an "Operation aborted" result.
NEW["abort-before-later-calls-sequential"] = {
  replies: () => [
    scriptedReply([
      ["toolCall", "sleep", "call_1", { ms: 5000 }],
      ["toolCall", "echo", "call_2", { text: "never" }],
      ["toolCall", "echo", "call_3", { text: "never" }],
    ]),
    scriptedReply([["text", "unreached"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { tools: [SLEEP, ECHO] }, toolExecution: "sequential" });
    agent.subscribe((event) => {
      if (event.type === "tool_execution_update") agent.abort();
    });
    await agent.prompt("sleep then echo");
    return agent;
  },
};

NEW["abort-in-before-tool-call"] = {
  replies: () => [
    scriptedReply([
      ["toolCall", "echo", "call_1", { text: "a" }],
      ["toolCall", "echo", "call_2", { text: "b" }],
      ["toolCall", "echo", "call_3", { text: "c" }],
    ]),
    scriptedReply([["text", "unreached"]]),
  ],
  run: async (rec) => {
    let agent;
    agent = rec.agent({
      initialState: { tools: [ECHO] },
      beforeToolCall: async ({ toolCall }) => {
        rec.hook("before_tool_call", toolCall.id);
        agent.abort();
        return undefined;
      },
    });
    await agent.prompt("echo three");
    return agent;
  },
};

NEW["peek-queued-messages"] = {
  replies: () => [
    scriptedReply([["toolCall", "echo", "call_1", { text: "a" }]]),
    scriptedReply([["text", "steered"]]),
    scriptedReply([["text", "followed"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { tools: [ECHO] } });
    const peek = () =>
      agent
        .peekQueuedMessages()
        .map((m) => textOf(m.content))
        .join(",");
    agent.subscribe((event) => {
      if (event.type === "tool_execution_start") {
        rec.note(`peek:${peek()}`);
        agent.followUp({ role: "user", content: "later", timestamp: 0 });
        rec.note(`peek:${peek()}`);
        agent.steer({ role: "user", content: "now", timestamp: 0 });
        agent.steer({ role: "user", content: "then", timestamp: 0 });
        rec.note(`peek:${peek()}`);
        agent.steeringMode = "all";
        rec.note(`peek:${peek()}`);
        rec.note(`queued:${agent.hasQueuedMessages()}`);
      }
    });
    await agent.prompt("start");
    return agent;
  },
};

NEW["thinking-level-and-duration"] = {
  replies: () => [
    scriptedReply([
      ["thinking", "sleep a bit"],
      ["toolCall", "sleep", "call_1", { ms: 5 }],
      ["toolCall", "nope", "call_2", {}],
    ]),
    scriptedReply([["text", "rested"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { tools: [SLEEP], thinkingLevel: "max" } });
    await agent.prompt("rest");
    return agent;
  },
};

// --- tool changes are declared before each request (pi 1.6), not once per run --------------------
//
// The loop compares the tools it can execute (context.tools) with what the transcript's system
// messages declare, before every request; a difference becomes a system message (toolsAdded /
// toolsRemoved), reported as message_start/message_end like any other message. A hook that
// changes the tools mid-run is therefore seen by the very next request.

const LOUD_ECHO = { ...ECHO, description: "Echo the text back, loudly." };
const toolNames = (tools) => tools.map((t) => t.name).join(",") || "-";

NEW["tools-added-by-prepare-next-turn"] = {
  replies: () => [
    scriptedReply([["toolCall", "echo", "call_1", { text: "hi" }]]),
    scriptedReply([["toolCall", "count", "call_2", { n: 2 }]]),
    scriptedReply([["text", "counted"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      prepareNextTurnWithContext: async (turn) => {
        rec.hook("prepare_next_turn", toolNames(turn.context.tools));
        if (turn.context.tools.length === 1) return { context: { ...turn.context, tools: [ECHO, COUNT] } };
        return undefined;
      },
    });
    await agent.prompt("echo, then count");
    return agent;
  },
};

NEW["tools-added-by-prepare-request"] = {
  replies: () => [
    scriptedReply([["toolCall", "count", "call_1", { n: 3 }]]),
    scriptedReply([["text", "counted"]]),
  ],
  run: async (rec) => {
    let requests = 0;
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      prepareRequest: async (request) => {
        requests++;
        rec.hook("prepare_request", toolNames(request.context.tools));
        // declared only before the next request: this one was declared already
        if (requests === 1) return { context: { ...request.context, tools: [ECHO, COUNT] } };
        return undefined;
      },
    });
    await agent.prompt("count to three");
    return agent;
  },
};

NEW["tool-removed-by-prepare-next-turn"] = {
  replies: () => [
    scriptedReply([["toolCall", "echo", "call_1", { text: "a" }]]),
    scriptedReply([["toolCall", "echo", "call_2", { text: "b" }]]),
    scriptedReply([["text", "echo is gone"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO, COUNT] },
      prepareNextTurnWithContext: async (turn) => {
        rec.hook("prepare_next_turn", toolNames(turn.context.tools));
        const tools = turn.context.tools.filter((t) => t.name !== "echo");
        return { context: { ...turn.context, tools } };
      },
    });
    await agent.prompt("echo twice");
    return agent;
  },
};

NEW["tool-added-in-before-tool-call"] = {
  replies: () => [
    scriptedReply([["toolCall", "echo", "call_1", { text: "hi" }]]),
    scriptedReply([["toolCall", "count", "call_2", { n: 1 }]]),
    scriptedReply([["text", "done"]]),
  ],
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO] },
      beforeToolCall: async (ctx) => {
        rec.hook("before_tool_call", toolNames(ctx.context.tools));
        // the hook changes the loop's tool list in place
        if (!ctx.context.tools.some((t) => t.name === "count")) ctx.context.tools.push(COUNT);
        return undefined;
      },
    });
    await agent.prompt("echo, then count");
    return agent;
  },
};

NEW["tools-changed-between-runs"] = {
  replies: () => [scriptedReply([["text", "one"]]), scriptedReply([["text", "two"]])],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { tools: [ECHO] } });
    await agent.prompt("first");
    // a redefined echo (removed and added again) and a new tool
    agent.state.tools = [LOUD_ECHO, COUNT];
    rec.note(`tools:${toolNames(agent.state.tools)}`);
    await agent.prompt("second");
    return agent;
  },
};

NEW["prompt-with-system-message"] = {
  replies: () => [scriptedReply([["text", "brief"]]), scriptedReply([["text", "still brief"]])],
  run: async (rec) => {
    const agent = rec.agent({ initialState: { systemPrompt: "Be helpful.", tools: [ECHO] } });
    agent.state.tools = [ECHO, COUNT];
    // the prompt's own system message carries the tool changes (no second system message)
    await agent.prompt([
      { role: "system", content: "", sections: { style: "Be brief." }, timestamp: 0 },
      { role: "user", content: "hi", timestamp: 0 },
    ]);
    // a system message in the prompt while the tools are unchanged stays as it was given
    const given = { role: "system", content: "Mind the units.", timestamp: 0 };
    await agent.prompt([given, { role: "user", content: "again", timestamp: 0 }]);
    const last = agent.state.messages.filter((m) => m.role === "system").at(-1);
    rec.note(`same-object:${last === given}`);
    return agent;
  },
};

NEW["continue-with-changed-tools"] = {
  replies: () => [scriptedReply([["text", "answered"]])],
  run: async (rec) => {
    const agent = rec.agent({
      initialState: { tools: [ECHO], messages: [{ role: "user", content: "pending question", timestamp: 0 }] },
    });
    agent.state.tools = [COUNT];
    await agent.continue();
    return agent;
  },
};

// --- run and write -------------------------------------------------------------------------------

async function record(name, run, replies) {
  const rec = new Recorder(name, replies);
  const started = performance.now();
  const agent = await run(rec);
  const state = agent.state;
  const final = {
    kind: "final",
    scenario: name,
    modelCalls: rec.calls,
    isStreaming: state.isStreaming,
    ...(state.errorMessage ? { errorMessage: state.errorMessage } : {}),
    messages: state.messages.map(renderMessage),
    toolResultTexts: state.messages
      .filter((m) => m.role === "toolResult")
      .map((m) => ({ toolCallId: m.toolCallId, isError: m.isError, text: textOf(m.content) })),
    queued: agent.hasQueuedMessages(),
  };
  rec.rows.push(final);
  const compact = {
    scenario: name,
    sequence: rec.compact(),
    finalRoles: state.messages.map(roleLabel),
    ...(state.errorMessage ? { errorMessage: state.errorMessage } : {}),
  };
  process.stderr.write(`${name}: ${(performance.now() - started).toFixed(0)} ms\n`);
  return { rows: rec.rows, compact };
}

const oldNames = [...new Set(OLD.map((row) => row.scenario))];
const rows = [];
const compacts = [];
for (const name of oldNames) {
  const out = await record(name, SCENARIOS[name], recordedReplies(name));
  rows.push(...out.rows);
  compacts.push({ ...out.compact, origin: "pi-0.73.1" });
}
for (const [name, { replies, run }] of Object.entries(NEW)) {
  const out = await record(name, run, replies());
  rows.push(...out.rows);
  compacts.push({ ...out.compact, origin: "pi-1.6" });
}
const jsonl = (items) => items.map((item) => JSON.stringify(item)).join("\n") + "\n";
writeFileSync(join(HERE, "agent-events.jsonl"), jsonl(rows));
writeFileSync(join(HERE, "agent-events.compact.jsonl"), jsonl(compacts));
process.stderr.write(`${compacts.length} scenarios written\n`);
