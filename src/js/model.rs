//! JavaScript classes for running a model: `ModelLoader` (streams a GGUF file into wasm memory),
//! `Model` (weights + tokenizer) and `Session` (KV cache, sampler, streaming decoder).

use std::rc::Rc;

use super::error::invalid;
use super::loader::FileBuffer;
use super::set;
use crate::error::Error;
use crate::model::chat::ChatMessage;
use crate::model::generate::{GenerateConfig, Generation};
use crate::model::sampler::SamplerConfig;
use crate::model::{Logits, Model};
use wasm_bindgen::prelude::*;

type JsResult<T> = Result<T, JsValue>;

#[wasm_bindgen(typescript_custom_section)]
const TS_MODEL: &str = r#"
/** What a loaded model is. */
export interface ModelInfo {
  architecture: string; parameters: number; quantization: string; contextLength: number;
  vocabSize: number; layers: number; embeddingLength: number; fileSize: number;
  /** "bpe" (byte-level BPE) or "spm" (SentencePiece). */
  tokenizer: string;
  /** Whether the file has its own chat template (else the built-in Gemma format is used). */
  chatTemplate: boolean;
}
/** Sampling settings; every field optional (temperature 0 = greedy). */
export interface SamplingOptions {
  temperature?: number; topK?: number; topP?: number; minP?: number;
  repeatPenalty?: number; repeatLastN?: number; seed?: number;
}
/** Settings of one generation (`session.prefill`): sampling, plus at most `maxTokens` new tokens
 * (default: until the context is full) and `stop` strings that end the text before them. */
export interface SessionOptions extends SamplingOptions { maxTokens?: number; stop?: string[]; }
/** Why a generation ended. */
export type FinishReason = "eog" | "maxTokens" | "stop" | "contextFull";
/** One generated token: `text` is final (whole characters, never part of a stop string);
 * `done` on the step that ends the generation, with its `reason`. */
export interface StepResult { token: number; text: string; eog: boolean; done: boolean; reason: FinishReason | null; }
export interface ChatMessage { role: "system" | "user" | "assistant" | "model" | string; content: string; }
"#;

/// Receives a GGUF file chunk by chunk straight into wasm memory, so the page never holds the
/// whole file itself: with a known size it reserves exactly once, otherwise it grows
/// geometrically.
#[wasm_bindgen]
pub struct ModelLoader {
    buf: FileBuffer,
}

#[wasm_bindgen]
impl ModelLoader {
    /// `totalBytes`: the size when known (Content-Length), for a single exact allocation.
    #[wasm_bindgen(constructor)]
    pub fn new(total_bytes: Option<f64>) -> JsResult<ModelLoader> {
        Ok(ModelLoader {
            buf: FileBuffer::new(total_bytes)?,
        })
    }

    /// Appends one chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> JsResult<()> {
        self.buf.push(chunk)
    }

    /// Bytes received so far.
    #[wasm_bindgen(getter)]
    pub fn loaded(&self) -> f64 {
        self.buf.loaded()
    }

    /// Parses the file and loads the model; the buffer becomes the weights' storage.
    pub fn finish(self) -> JsResult<JsModel> {
        Ok(JsModel {
            model: Rc::new(Model::load(self.buf.into_bytes())?),
        })
    }
}

/// A loaded model: its weights stay in the file's bytes inside wasm memory.
#[wasm_bindgen(js_name = Model)]
pub struct JsModel {
    model: Rc<Model>,
}

#[wasm_bindgen(js_class = Model)]
impl JsModel {
    /// Loads a model from the whole file (copied into wasm memory; prefer `ModelLoader` for
    /// large files).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: Vec<u8>) -> JsResult<JsModel> {
        Ok(JsModel {
            model: Rc::new(Model::load(bytes)?),
        })
    }

    #[wasm_bindgen(getter, unchecked_return_type = "ModelInfo")]
    pub fn info(&self) -> js_sys::Object {
        let m = &self.model;
        let o = js_sys::Object::new();
        // The dtype most matrices use (norms are always f32 and do not count).
        let mut counts = [0usize; crate::DType::ALL.len()];
        for t in m.gguf().tensors.iter().filter(|t| t.dims.len() == 2) {
            counts[t.dtype as usize] += 1;
        }
        let quant = (0..counts.len())
            .max_by_key(|&i| counts[i])
            .filter(|&i| counts[i] > 0)
            .map_or("f32", |i| crate::DType::ALL[i].name());
        set(
            &o,
            "architecture",
            m.gguf().architecture().unwrap_or("?").into(),
        );
        set(&o, "parameters", (m.parameter_count() as f64).into());
        set(&o, "quantization", quant.into());
        set(
            &o,
            "contextLength",
            (m.config().context_length as f64).into(),
        );
        set(&o, "vocabSize", (m.config().n_vocab as f64).into());
        set(&o, "layers", (m.config().n_layer as f64).into());
        set(&o, "embeddingLength", (m.config().n_embd as f64).into());
        set(&o, "fileSize", (m.file_size() as f64).into());
        set(&o, "tokenizer", m.tokenizer().kind().into());
        set(&o, "chatTemplate", m.chat_format().has_template().into());
        o
    }

    /// Token ids of `text` (BOS added when `addSpecial`; special tokens parsed when `parseSpecial`).
    pub fn tokenize(
        &self,
        text: &str,
        add_special: Option<bool>,
        parse_special: Option<bool>,
    ) -> Vec<u32> {
        self.model.tokenizer().encode(
            text,
            add_special.unwrap_or(true),
            parse_special.unwrap_or(true),
        )
    }

    /// Text of `ids` (control tokens omitted unless `special`).
    pub fn detokenize(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Ids")] ids: Vec<u32>,
        special: Option<bool>,
    ) -> JsResult<String> {
        Ok(self
            .model
            .tokenizer()
            .decode(&ids, special.unwrap_or(false))?)
    }

    /// Whether `id` ends a generation (end of turn / end of sequence).
    #[wasm_bindgen(js_name = isEndOfGeneration)]
    pub fn is_eog(&self, id: u32) -> bool {
        self.model.tokenizer().is_eog(id)
    }

    /// The prompt for `messages` in the model's own chat template (the built-in Gemma format
    /// when the file has none), ending with the assistant turn's opening. `enableThinking`:
    /// Qwen 3's switch (false writes the empty think block). The JS layer passes the checked
    /// messages flattened: `[role0, content0, role1, content1, …]`.
    #[wasm_bindgen(js_name = formatChat)]
    pub fn format_chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: Vec<String>,
        enable_thinking: Option<bool>,
    ) -> JsResult<String> {
        let list = chat_messages(&messages)?;
        Ok(self
            .model
            .chat_format()
            .render(&list, true, enable_thinking)?)
    }

    /// The token ids of [`JsModel::format_chat`]'s prompt, with exactly one BOS.
    #[wasm_bindgen(js_name = chatTokens)]
    pub fn chat_tokens(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ChatMessage[]")] messages: Vec<String>,
        enable_thinking: Option<bool>,
    ) -> JsResult<Vec<u32>> {
        let list = chat_messages(&messages)?;
        Ok(self
            .model
            .chat_format()
            .tokens(&list, true, enable_thinking)?)
    }

    /// Runs the model once on a throwaway session (`Model::warm_up`): the engine calls it after
    /// loading, so the browser has the kernels compiled before the first prompt.
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up(&self) -> JsResult<()> {
        Ok(self.model.warm_up()?)
    }

    /// A session with a KV cache for `context` positions (1 ..= the model's context length).
    /// Its cache's first 128 positions and its buffers for one prompt pass (128 tokens, 64 on
    /// one thread) are written now, so a prompt that long takes no page faults: create it before
    /// the prompt is known where the time to first token counts.
    #[wasm_bindgen(js_name = createSession)]
    pub fn create_session(&self, context: usize) -> JsResult<JsSession> {
        let max = self.model.config().context_length;
        if context == 0 || context > max {
            return Err(invalid(
                "createSession",
                format!("context {context} is outside 1..={max} (the model's context length)"),
            ));
        }
        Ok(JsSession {
            session: self.model.session(context)?,
            model: self.model.clone(),
            generation: None,
        })
    }
}

/// One sequence: a KV cache that outlives a generation (the next `prefill` reuses what it holds),
/// and the generation in progress.
#[wasm_bindgen(js_name = Session)]
pub struct JsSession {
    model: Rc<Model>,
    session: crate::model::Session,
    generation: Option<Generation>,
}

/// Messages from the flattened `[role, content, …]` the JS layer passes.
fn chat_messages(flat: &[String]) -> Result<Vec<ChatMessage>, JsValue> {
    if flat.len() % 2 != 0 {
        return Err(invalid("formatChat", "expected (role, content) pairs"));
    }
    Ok(flat
        .chunks_exact(2)
        .map(|p| ChatMessage::new(p[0].clone(), p[1].clone()))
        .collect())
}

/// `GenerateOptions` as JavaScript spells them (the sampler's keys plus `maxTokens` and `stop`):
/// every key optional, wrong types rejected by serde (a string `"0"` is not a temperature); the
/// ranges are [`SamplerConfig::validate`]'s. The JS layer (`js/args.js`) has already checked the
/// keys by name, for messages that name them.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
struct SamplingOptions {
    max_tokens: Option<u32>,
    stop: Option<Vec<String>>,
    temperature: Option<f32>,
    top_k: Option<u32>,
    top_p: Option<f32>,
    min_p: Option<f32>,
    repeat_penalty: Option<f32>,
    repeat_last_n: Option<u32>,
    seed: Option<u64>,
}

impl SamplingOptions {
    /// The generation settings of `options` (`undefined` = all defaults: no token limit but the
    /// context, no stop strings, the default sampler), validated.
    fn parse(options: JsValue) -> Result<GenerateConfig, Error> {
        let d = SamplerConfig::default();
        let o: SamplingOptions = if options.is_undefined() || options.is_null() {
            SamplingOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(|e| Error::InvalidArgument {
                op: "SamplingOptions",
                reason: e.to_string().trim_start_matches("Error: ").to_string(),
            })?
        };
        let sampler = SamplerConfig {
            temperature: o.temperature.unwrap_or(d.temperature),
            top_k: o.top_k.map_or(d.top_k, |k| k as usize),
            top_p: o.top_p.unwrap_or(d.top_p),
            min_p: o.min_p.unwrap_or(d.min_p),
            repeat_penalty: o.repeat_penalty.unwrap_or(d.repeat_penalty),
            repeat_last_n: o.repeat_last_n.map_or(d.repeat_last_n, |n| n as usize),
            seed: o.seed.unwrap_or(d.seed),
        };
        sampler.validate()?;
        Ok(GenerateConfig {
            max_tokens: o.max_tokens.map_or(usize::MAX, |n| n as usize),
            stop: o.stop.unwrap_or_default(),
            sampler,
        })
    }
}

#[wasm_bindgen(js_class = Session)]
impl JsSession {
    /// Evaluates `ids` after what the session holds (one batched call) and returns the logits
    /// of the last position. Ends a generation in progress.
    pub fn eval(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Ids")] ids: Vec<u32>,
    ) -> JsResult<Vec<f32>> {
        self.generation = None;
        let logits = self.session.eval(&self.model, &ids, Logits::Last)?;
        Ok(crate::storage::try_copy(logits)?)
    }

    /// Puts a prompt in the cache — keeping the longest prefix it shares with what the cache
    /// holds, evaluating only the rest — and starts a generation for `step()`. Returns how many
    /// prompt tokens came from the cache.
    pub fn prefill(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Ids")] ids: Vec<u32>,
        #[wasm_bindgen(unchecked_param_type = "SessionOptions")] options: JsValue,
    ) -> JsResult<usize> {
        let cfg = SamplingOptions::parse(options)?;
        self.generation = None;
        let g = Generation::start(&self.model, &mut self.session, &ids, cfg)?;
        let cached = g.cached();
        self.generation = Some(g);
        Ok(cached)
    }

    /// Generates one token. Returns `{ token, text, eog, done, reason }`: `text` is final text
    /// (whole UTF-8 characters, never part of a stop string), `done` is set on the step that
    /// ends the generation, `reason` then says why (`eog`, `maxTokens`, `stop`, `contextFull`).
    #[wasm_bindgen(unchecked_return_type = "StepResult")]
    pub fn step(&mut self) -> JsResult<js_sys::Object> {
        let Some(g) = self.generation.as_mut() else {
            return Err(invalid("step", "call prefill() first"));
        };
        let Some(piece) = g.step(&self.model, &mut self.session)? else {
            return Err(invalid(
                "step",
                "the generation has ended: call prefill() again",
            ));
        };
        let o = js_sys::Object::new();
        set(&o, "token", (piece.token as f64).into());
        set(&o, "text", piece.text.into());
        set(&o, "eog", piece.eog.into());
        set(&o, "done", g.finish().is_some().into());
        let reason: Option<&'static str> = g.finish().map(Into::into);
        set(&o, "reason", reason.map_or(JsValue::NULL, JsValue::from));
        Ok(o)
    }

    /// Positions used so far.
    #[wasm_bindgen(getter)]
    pub fn position(&self) -> usize {
        self.session.tokens().len()
    }

    /// Positions the KV cache holds.
    #[wasm_bindgen(getter)]
    pub fn capacity(&self) -> usize {
        self.session.capacity()
    }

    /// The token ids the cache holds, in position order.
    #[wasm_bindgen(getter, unchecked_return_type = "Uint32Array")]
    pub fn tokens(&self) -> JsResult<Vec<u32>> {
        Ok(crate::storage::try_copy(self.session.tokens())?)
    }

    /// Keeps the first `n` positions of the cache (ends a generation in progress).
    pub fn truncate(&mut self, n: usize) {
        self.generation = None;
        self.session.truncate(n);
    }

    /// Starts over from an empty context.
    pub fn reset(&mut self) {
        self.generation = None;
        self.session.reset();
    }

    /// The cache as bytes (tokens and keys/values of the used positions, with a header naming
    /// the model file); `load` restores it.
    pub fn save(&self) -> JsResult<Vec<u8>> {
        Ok(self.session.save(&self.model)?)
    }

    /// Restores bytes from `save()`: `InvalidSession` when they are damaged or not a session,
    /// `SessionMismatch` for another model file or a context too small; the session is then
    /// unchanged.
    pub fn load(&mut self, bytes: &[u8]) -> JsResult<()> {
        self.session.load(&self.model, bytes)?;
        self.generation = None;
        Ok(())
    }
}

#[wasm_bindgen(typescript_custom_section)]
const TS_PROFILE: &str = r#"
/** Milliseconds, calls, weight bytes read (each matrix once per call) and matmul operations
 * (2 per weight and token) per section of the forward pass (see `profileStart`). */
export type SectionProfile = Record<"embed" | "norms" | "qkv" | "rope" | "attend" | "attnOut" |
  "gateUp" | "activation" | "down" | "lmHead" | "sample", { ms: number; calls: number; weightBytes: number; ops: number }> & {
  /** The thread team's parallel loops led meanwhile (zeros on one thread): their chunks, those
   * the helpers ran, and the milliseconds the leader then waited for the helpers' last ones. */
  team: { jobs: number; chunks: number; helperChunks: number; waitMs: number };
};
"#;

/// Starts timing the forward pass's sections on this thread, from zero (`model::profile`: the
/// leader's wall time per section, so with threads a section that waits on the team shows it).
#[wasm_bindgen(js_name = profileStart)]
pub fn profile_start() {
    crate::model::profile::start();
}

/// The sections' time since `profileStart` or the last `profileTake`, restarting from zero;
/// `undefined` when not profiling. `stop`: also ends profiling.
#[wasm_bindgen(js_name = profileTake, unchecked_return_type = "SectionProfile | undefined")]
pub fn profile_take(stop: bool) -> JsValue {
    use crate::model::profile::{self, Section};
    let p = if stop {
        profile::stop()
    } else {
        profile::take()
    };
    let Some(p) = p else {
        return JsValue::UNDEFINED;
    };
    let o = js_sys::Object::new();
    for s in Section::ALL {
        let entry = js_sys::Object::new();
        set(&entry, "ms", p.ms(s).into());
        set(&entry, "calls", (p.calls(s) as f64).into());
        set(&entry, "weightBytes", (p.weight_bytes(s) as f64).into());
        set(&entry, "ops", (p.ops(s) as f64).into());
        set(&o, s.name(), entry.into());
    }
    let (t, team) = (p.team(), js_sys::Object::new());
    set(&team, "jobs", (t.jobs as f64).into());
    set(&team, "chunks", (t.chunks as f64).into());
    set(&team, "helperChunks", (t.helper_chunks as f64).into());
    set(&team, "waitMs", t.wait_ms.into());
    set(&o, "team", team.into());
    o.into()
}
