export * from "../pkg/kopitiam_wasm.js";
export { default } from "../pkg/kopitiam_wasm.js";
import type { ModelInfo, SamplingOptions, ChatMessage } from "../pkg/kopitiam_wasm.js";

export type Build = "auto" | "simd" | "relaxed" | "threads" | "relaxed-threads";
export function relaxedSimdSupported(): boolean;
export function threadsSupported(): boolean;
export function pickBuild(threads?: number | "auto"): Exclude<Build, "auto">;
/** Whether `e` was thrown by kopitiam-wasm (Rust or JavaScript layer): then `e.code` is set. */
export function isKopitiamError(e: unknown): e is import("../pkg/kopitiam_wasm.js").KopitiamError;
/** The codes only the JavaScript layer raises (`errorCodes()` lists all). */
export const JS_ERROR_CODES: readonly string[];
export function loadKopitiam(options?: { build?: Build; threads?: number | "auto"; wasm?: BufferSource | WebAssembly.Module }):
  Promise<{ build: Exclude<Build, "auto">; threads: number; module: typeof import("../pkg/kopitiam_wasm.js"); memory: WebAssembly.Memory }>;

export interface Progress { loaded: number; total?: number; phase: "download" | "load"; }
export interface GenerateOptions extends SamplingOptions {
  maxTokens?: number; stop?: string | string[]; contextLength?: number; signal?: AbortSignal;
}
export interface Stats {
  promptTokens: number; prefillMs: number; generatedTokens: number; decodeMs: number;
  prefillTokensPerSecond: number; decodeTokensPerSecond: number; memoryBytes: number;
}
export interface Completion { text: string; tokens: number[]; stats: Stats; stopped: boolean; }
export interface EngineInfo extends Partial<ModelInfo> { build: string; threads: number; memoryBytes?: number; }
export type ModelSource = string | URL | Response | ArrayBuffer | Uint8Array | Blob | ReadableStream<Uint8Array>;

export interface Engine {
  readonly info: EngineInfo;
  loadModel(source: ModelSource, options?: { onProgress?: (p: Progress) => void; signal?: AbortSignal; cache?: boolean }): Promise<EngineInfo>;
  tokenize(text: string, options?: { addSpecial?: boolean; parseSpecial?: boolean }): Promise<number[]>;
  detokenize(ids: ArrayLike<number>): Promise<string>;
  generate(prompt: string, options?: GenerateOptions): AsyncGenerator<{ text: string; token: number }>;
  complete(prompt: string, options?: GenerateOptions & { onToken?: (piece: { text: string; token: number }) => void }): Promise<Completion>;
  chat(messages: ChatMessage[], options?: GenerateOptions & { enableThinking?: boolean; onToken?: (piece: { text: string; token: number }) => void }): Promise<Completion>;
  logits(ids: ArrayLike<number>): Promise<Float32Array>;
  dispose(): Promise<void>;
}
export function createEngine(options?: { threads?: number | "auto"; build?: Build; workerUrl?: string | URL }): Promise<Engine>;
