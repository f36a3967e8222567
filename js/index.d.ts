export * from "../pkg/kopitiam_wasm.js";
export { default } from "../pkg/kopitiam_wasm.js";
import type { ModelInfo, SamplingOptions, ChatMessage, SectionProfile } from "../pkg/kopitiam_wasm.js";

export type Build = "auto" | "simd" | "relaxed" | "threads" | "relaxed-threads" | "ocr" | "ocr-relaxed";
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
  /** false: evaluate the whole prompt instead of reusing the cached context (default true). */
  cache?: boolean;
  /** true: `stats.profile` holds the time per section of the forward pass (default false). */
  profile?: boolean;
}
/** Called once per token, in order; after the first they arrive in groups (one per ~16 ms). */
export type OnToken = (piece: { text: string; token: number }) => void;
export interface ChatOptions extends GenerateOptions {
  enableThinking?: boolean;
  /** true: when the conversation does not fit, drop its oldest turns after the system message
   * (default false: fail with ContextFull). */
  contextShift?: boolean;
  onToken?: OnToken;
}
export interface Stats {
  /** The whole prompt, and how many of its tokens came from the cache (not evaluated). */
  promptTokens: number; cachedTokens: number;
  /** Time and rate of the evaluated prompt tokens only (promptTokens − cachedTokens). */
  prefillMs: number; prefillTokensPerSecond: number;
  generatedTokens: number; decodeMs: number; decodeTokensPerSecond: number;
  finishReason: import("../pkg/kopitiam_wasm.js").FinishReason | "aborted";
  /** Messages `contextShift` dropped to make the conversation fit. */
  droppedMessages: number;
  memoryBytes: number;
  /** With `profile: true`: the prompt's and the generated tokens' time per section. */
  profile?: { prefill: SectionProfile; decode: SectionProfile };
}
export interface Completion { text: string; tokens: number[]; stats: Stats; stopped: boolean; }
export interface EngineInfo extends Partial<ModelInfo> { build: string; threads: number; memoryBytes?: number; }
export type ModelSource = string | URL | Response | ArrayBuffer | Uint8Array | Blob | ReadableStream<Uint8Array>;

export interface Engine {
  readonly info: EngineInfo;
  /** `contextLength`: positions of the kept KV cache (default: the file's, at most 4096). */
  loadModel(source: ModelSource, options?: { onProgress?: (p: Progress) => void; signal?: AbortSignal; cache?: boolean; contextLength?: number }): Promise<EngineInfo>;
  tokenize(text: string, options?: { addSpecial?: boolean; parseSpecial?: boolean }): Promise<number[]>;
  detokenize(ids: ArrayLike<number>): Promise<string>;
  /** Yields each token's piece, in order; after the first they arrive in groups (one per ~16 ms). */
  generate(prompt: string, options?: GenerateOptions): AsyncGenerator<{ text: string; token: number }>;
  complete(prompt: string, options?: GenerateOptions & { onToken?: OnToken }): Promise<Completion>;
  chat(messages: ChatMessage[], options?: ChatOptions): Promise<Completion>;
  /** Forgets the cached context. */
  resetContext(): Promise<void>;
  /** The cached context as bytes (tokens + KV of the used positions, naming the model file). */
  saveSession(): Promise<Uint8Array>;
  /** Restores `saveSession()` bytes; InvalidSession / SessionMismatch when they do not fit. */
  loadSession(bytes: Uint8Array | ArrayBuffer): Promise<{ tokens: number }>;
  logits(ids: ArrayLike<number>): Promise<Float32Array>;
  dispose(): Promise<void>;
}
export function createEngine(options?: { threads?: number | "auto"; build?: Build; workerUrl?: string | URL }): Promise<Engine>;

import type { OcrModelInfo, OcrLine, OcrPage } from "../pkg/kopitiam_wasm.js";
/** An image for the OCR: `ImageData`, or RGBA (4 bytes a pixel) or 8-bit grey (1 byte a pixel). */
export interface OcrImage { width: number; height: number; data: Uint8ClampedArray | Uint8Array; }
/** The low-level OCR model (any thread); `createOcr()` runs one in a Worker. */
export declare class OcrModel {
  private constructor();
  /** Loads the LSTM recognizer of a `.traineddata` (tessdata_fast / Debian integer models). */
  static fromBytes(bytes: Uint8Array | ArrayBuffer): OcrModel;
  readonly info: OcrModelInfo;
  /** Reads one line of text: the line's ink is found and cut out as `tesseract --psm 7` does. */
  recognizeLine(image: OcrImage): OcrLine;
  /** Reads a simple page: one column of horizontal lines on a plain background. */
  recognize(image: OcrImage): OcrPage;
  /** `recognizeLine` / `recognize` of PNG bytes, decoded in wasm. */
  recognizeLinePng(png: Uint8Array | ArrayBuffer): OcrLine;
  recognizePng(png: Uint8Array | ArrayBuffer): OcrPage;
  free(): void;
}
export interface OcrInfo extends Partial<OcrModelInfo> { build: string; memoryBytes?: number; }
export interface Ocr {
  readonly info: OcrInfo;
  loadModel(source: ModelSource, options?: { onProgress?: (p: Progress) => void; signal?: AbortSignal; cache?: boolean }): Promise<OcrInfo>;
  /** `image`: pixels, an encoded image Blob / File (decoded in the worker), or an ImageBitmap
   * (transferred, then closed). */
  recognizeLine(image: OcrImage | Blob | ImageBitmap): Promise<OcrLine>;
  recognize(image: OcrImage | Blob | ImageBitmap): Promise<OcrPage>;
  dispose(): Promise<void>;
}
/** Starts the OCR in a dedicated Worker on a single-thread build: "auto" picks the OCR's own
 * (no LLM half), relaxed SIMD where the browser has it. */
export function createOcr(options?: { build?: "auto" | "ocr" | "ocr-relaxed" | "simd" | "relaxed"; workerUrl?: string | URL }): Promise<Ocr>;
