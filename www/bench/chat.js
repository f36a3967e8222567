// `npm run bench:chat` (scripts/bench-chat.mjs) runs this in headless Chromium: one 10-turn
// greedy chat with the engine's KV cache reused, then the same conversation (the same
// messages, so the same prompts) with `cache: false`, on one engine build each. Per turn: the
// prompt, the tokens taken from the cache, the tokens evaluated and the prefill time; and the
// size of `saveSession()` per 1,000 positions.
import { createEngine } from "/js/engine.js";

const QUESTIONS = [
  "Hi! Who are you?", "What is the capital of France?", "Tell me one fact about it.",
  "How many people live there?", "What river runs through it?", "Name a famous museum there.",
  "What is it known for?", "Suggest a dish to try.", "How do I say thank you in French?",
  "Thanks, goodbye!",
];

async function conversation(model, build, cache, replies) {
  const engine = await createEngine({ threads: 1, build });
  await engine.loadModel(model, { contextLength: 4096 });
  const messages = [{ role: "system", content: "You are a helpful assistant. Answer in one or two sentences." }];
  const turns = [];
  for (const [i, q] of QUESTIONS.entries()) {
    messages.push({ role: "user", content: q });
    const r = await engine.chat(messages, { temperature: 0, maxTokens: 48, cache });
    const s = r.stats;
    turns.push({ prompt: s.promptTokens, cached: s.cachedTokens, evaluated: s.promptTokens - s.cachedTokens, prefillMs: s.prefillMs, generated: s.generatedTokens });
    messages.push({ role: "assistant", content: replies?.[i] ?? r.text });
  }
  const bytes = await engine.saveSession();
  const positions = turns.at(-1).prompt + turns.at(-1).generated - 1;
  await engine.dispose();
  return { turns, replies: messages.filter((m) => m.role === "assistant").map((m) => m.content), sessionBytes: bytes.byteLength, positions, build: engine.info.build };
}

globalThis.runChatBench = async (model, build) => {
  const reuse = await conversation(model, build, true);
  const fresh = await conversation(model, build, false, reuse.replies);
  return { reuse, fresh };
};
