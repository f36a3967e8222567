// The engine's worker: owns the wasm instance, the model and its session (the KV cache that
// later requests reuse). Messages are those of js/protocol.js.
import { loadKopitiam } from "./loader.js";
import { codedError } from "./errors.js";
import * as protocol from "./protocol.js";
import { loadFile, serve } from "./worker-host.js";

let kw = null;
let env = null;
let model = null;
/** The conversation's session, kept between requests; `contextSize` positions. */
let session = null;
let contextSize = 0;
/** The context a model gets when `loadModel` names none: the file's, up to this. */
const DEFAULT_CONTEXT = 4096;

/**
 * A macrotask yield (faster than setTimeout) so abort messages get through during a generation.
 * One channel serves every yield: a yield and a token message through a new channel each time
 * took about three times as long (measured in headless Chromium, on a busy machine).
 */
const yieldChannel = new MessageChannel();
const yielding = [];
yieldChannel.port1.onmessage = () => yielding.shift()();
function yieldToEvents() {
  return new Promise((resolve) => {
    yielding.push(resolve);
    yieldChannel.port2.postMessage(0);
  });
}

function modelInfo() {
  return { ...model.info, build: kw.buildInfo(), threads: env.threads, memoryBytes: env.memory.buffer.byteLength };
}

const handlers = {
  async init({ threads, build }) {
    env = await loadKopitiam({ threads, build });
    kw = env.module;
    return { build: kw.buildInfo(), threads: env.threads };
  },

  async load(msg, signal) {
    dropModel();
    const loader = await loadFile((size) => new kw.ModelLoader(size), msg, signal);
    model = loader.finish();
    model.warmUp(); // the first prompt then runs optimised code (Model.warmUp in src/js/model.rs)
    contextSize = Math.min(model.info.contextLength, msg.contextLength ?? DEFAULT_CONTEXT);
    // The kept session now, not at the first prompt: creating it allocates the cache and writes
    // the buffers a first prompt fills (Session::new in src/model/session.rs), which then count
    // as loading, not as the first prompt's time to first token.
    sessionFor();
    return modelInfo();
  },

  tokenize({ text, addSpecial, parseSpecial }) {
    requireModel();
    return Array.from(model.tokenize(text, addSpecial, parseSpecial));
  },

  detokenize({ ids }) {
    requireModel();
    return model.detokenize(Uint32Array.from(ids));
  },

  async generate(msg, signal) {
    requireModel();
    // The page checked every option (js/engine.js); what is not the loop's is the sampler's.
    const { maxTokens = 128, stop = [], contextLength, enableThinking, cache = true, contextShift = false, profile = false, ...sampling } = msg.opts ?? {};
    const s = sessionFor(contextLength);
    const limit = Math.min(s.capacity, contextLength ?? s.capacity);
    const { ids, dropped } = msg.messages
      ? fitMessages(msg.messages, limit, enableThinking, contextShift)
      : { ids: model.tokenize(msg.prompt, true, true), dropped: 0 };
    if (ids.length + 1 > limit) {
      throw codedError("ContextFull", `the prompt has ${ids.length} tokens; the context holds ${limit}`);
    }
    if (!cache) s.reset();
    // Also ends a profile that a failed generation left running.
    if (profile) kw.profileStart();
    else kw.profileTake(true);
    const t0 = performance.now();
    const cachedTokens = s.prefill(ids, { ...sampling, stop, maxTokens: Math.min(maxTokens, limit - ids.length) });
    const t1 = performance.now();
    const prefillProfile = profile ? kw.profileTake(false) : undefined;
    const tokens = [];
    let text = "";
    let stopped = false;
    let finishReason = null;
    // Pieces go out in one event per FLUSH_MS, the first alone (the time to first token); the
    // loop only turns to its events (an abort) at those times.
    let pieces = [];
    let flushedAt = -Infinity;
    let firstSent = false;
    const flush = () => {
      if (pieces.length) postMessage(protocol.tokens(msg.id, pieces));
      firstSent ||= pieces.length > 0;
      pieces = [];
    };
    try {
      while (!finishReason) {
        if (performance.now() - flushedAt >= protocol.FLUSH_MS || (!firstSent && pieces.length)) {
          flush();
          await yieldToEvents();
          flushedAt = performance.now();
          if (signal.aborted) {
            stopped = true;
            break;
          }
        }
        const step = s.step();
        if (!step.eog) tokens.push(step.token);
        text += step.text;
        if (step.text || !step.eog) pieces.push({ token: step.token, text: step.text });
        finishReason = step.reason;
      }
    } finally {
      // Also before a failure's answer: the page has every token made before it.
      flush();
    }
    const t2 = performance.now();
    const decodeProfile = profile ? kw.profileTake(true) : undefined;
    const evaluated = ids.length - cachedTokens;
    const stats = {
      promptTokens: ids.length,
      cachedTokens,
      prefillMs: t1 - t0,
      generatedTokens: tokens.length,
      decodeMs: t2 - t1,
      prefillTokensPerSecond: evaluated / ((t1 - t0) / 1e3),
      decodeTokensPerSecond: tokens.length / ((t2 - t1) / 1e3),
      finishReason: stopped ? "aborted" : finishReason,
      droppedMessages: dropped,
      memoryBytes: env.memory.buffer.byteLength,
    };
    if (profile) stats.profile = { prefill: prefillProfile, decode: decodeProfile };
    return { text, tokens, stats, stopped };
  },

  resetContext() {
    session?.reset();
    return true;
  },

  saveSession() {
    requireModel();
    return sessionFor().save();
  },

  loadSession({ bytes }) {
    requireModel();
    const s = sessionFor();
    s.load(bytes);
    return { tokens: s.position };
  },

  logits({ ids }) {
    requireModel();
    // Too many ids fail in eval with ContextFull, as for a generation.
    const session = model.createSession(Math.max(1, Math.min(ids.length, model.info.contextLength)));
    try {
      return session.eval(Uint32Array.from(ids));
    } finally {
      session.free();
    }
  },

  dispose() {
    dropModel();
    return true;
  },
};

function requireModel() {
  if (!model) throw codedError("NoModel", "no model is loaded: call loadModel first");
}

function dropModel() {
  session?.free();
  session = null;
  model?.free();
  model = null;
}

/** The kept session, created on first use; a request for a longer context than it has gets a
 * new one of that size (the cached context is then gone). */
function sessionFor(contextLength) {
  const want = Math.min(model.info.contextLength, Math.max(contextSize, contextLength ?? 0));
  if (session && session.capacity < want) {
    session.free();
    session = null;
  }
  session ??= model.createSession(want);
  return session;
}

/** The prompt ids of `messages`; with `shift`, the oldest turns after the system message are
 * dropped (a user message and the reply after it) until the prompt leaves room for a reply
 * token, never the last message. */
function fitMessages(messages, limit, enableThinking, shift) {
  let list = messages;
  let ids = model.chatTokens(list, enableThinking);
  let dropped = 0;
  while (shift && ids.length + 1 > limit) {
    const first = list.findIndex((m) => m.role !== "system");
    if (first < 0 || first >= list.length - 1) break;
    const n = list[first + 1]?.role === "user" || first + 1 >= list.length - 1 ? 1 : 2;
    list = [...list.slice(0, first), ...list.slice(first + n)];
    dropped += n;
    ids = model.chatTokens(list, enableThinking);
  }
  return { ids, dropped };
}

/** Requests that use or replace the kept session run one after another (a generation yields
 * between tokens, so a second one would otherwise interleave with it); the rest run at once. */
serve(handlers, new Set(["load", "generate", "resetContext", "saveSession", "loadSession", "dispose"]));
