//! The generation loop, written once for the CLI, the JS `Session` and the worker engine:
//! sample → end-of-generation / max-tokens / stop-string check → streaming UTF-8 decode →
//! evaluate.
//!
//! Two rules shape it. A sampled token is evaluated only when the next one is asked for, so the
//! last token of a generation never costs a forward pass (and a stopped generation leaves the
//! cache holding exactly what was used). Text that could still become a stop string is held
//! back, so a stop string split over two pieces is never streamed and then taken back.

use super::profile::{self, Section};
use super::sampler::{Sampler, SamplerConfig};
use super::tokenizer::StreamDecoder;
use super::{Model, Session};
use crate::error::{Error, Result};
use crate::storage::try_refill;

/// What a generation may produce.
#[derive(Debug, Clone, Default)]
pub struct GenerateConfig {
    /// New tokens at most (end-of-generation tokens not counted).
    pub max_tokens: usize,
    /// Texts that end the generation; the output stops just before the first one (empty
    /// strings are ignored).
    pub stop: Vec<String>,
    pub sampler: SamplerConfig,
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "camelCase")]
pub enum Finish {
    /// The model sampled an end-of-generation token.
    Eog,
    /// `max_tokens` were generated.
    MaxTokens,
    /// A stop string appeared.
    Stop,
    /// The KV cache is full.
    ContextFull,
}

/// One step's output: the token sampled (`eog` when it ended the generation and is not part
/// of the text) and the text that is now final (possibly empty while held back).
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub token: u32,
    pub eog: bool,
    pub text: String,
}

/// A generation in progress over a [`Session`].
pub struct Generation {
    sampler: Sampler,
    decoder: StreamDecoder,
    stop: Vec<String>,
    max_tokens: usize,
    /// The prompt's logits until the first step samples them.
    logits: Vec<f32>,
    /// Sampled and emitted, not yet evaluated.
    pending: Option<u32>,
    /// Decoded text not yet emitted: it may be the start of a stop string.
    held: String,
    tokens: Vec<u32>,
    finish: Option<Finish>,
    cached: usize,
}

impl Generation {
    /// Puts `ids` in the session's cache, reusing its longest common prefix with what the
    /// cache holds (see [`Session::prefill_reusing`]), and returns a generation ready to
    /// [`Generation::step`]. Errors with [`Error::ContextFull`] when the prompt leaves no room
    /// for one new token.
    pub fn start(
        model: &Model,
        session: &mut Session,
        ids: &[u32],
        cfg: GenerateConfig,
    ) -> Result<Generation> {
        cfg.sampler.validate()?;
        if ids.len() >= session.capacity() {
            return Err(Error::ContextFull {
                needed: ids.len() + 1,
                capacity: session.capacity(),
            });
        }
        let mut logits = Vec::new();
        let (l, cached) = session.prefill_reusing(model, ids)?;
        try_refill(&mut logits, l)?;
        Ok(Generation {
            sampler: Sampler::new(cfg.sampler),
            decoder: StreamDecoder::new(),
            stop: cfg.stop.into_iter().filter(|s| !s.is_empty()).collect(),
            max_tokens: cfg.max_tokens,
            logits,
            pending: None,
            held: String::new(),
            tokens: Vec::new(),
            finish: (cfg.max_tokens == 0).then_some(Finish::MaxTokens),
            cached,
        })
    }

    /// Prompt tokens that came from the cache instead of being evaluated.
    pub fn cached(&self) -> usize {
        self.cached
    }

    /// Tokens generated so far (the end-of-generation token excluded).
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Why the generation ended, once it has.
    pub fn finish(&self) -> Option<Finish> {
        self.finish
    }

    /// Generates one token: `None` once the generation has ended (the step that ends it still
    /// returns its piece, with the held-back text flushed).
    pub fn step(&mut self, model: &Model, session: &mut Session) -> Result<Option<Piece>> {
        if self.finish.is_some() {
            return Ok(None);
        }
        let t = match self.pending {
            // The prompt's logits, kept since `start` and freed once used (later steps sample
            // from the session's scratch; after a failed one this errors rather than reusing them).
            None => {
                let t = sample(&mut self.sampler, &self.logits, session.tokens(), None)?;
                self.logits = Vec::new();
                t
            }
            Some(t) if session.tokens().len() >= session.capacity() => {
                let text = self.end(Finish::ContextFull);
                return Ok(Some(Piece {
                    token: t,
                    eog: false,
                    text,
                }));
            }
            Some(t) => {
                let greedy = self.sampler.picks_the_top();
                let (logits, history, top) = session.eval_last(model, &[t], greedy)?;
                self.pending = None;
                sample(&mut self.sampler, logits, history, top)?
            }
        };
        if model.tokenizer().is_eog(t) {
            let text = self.end(Finish::Eog);
            return Ok(Some(Piece {
                token: t,
                eog: true,
                text,
            }));
        }
        let piece = self.decoder.push(model.tokenizer(), t)?;
        self.tokens.push(t);
        self.held.push_str(&piece);
        let text = if let Some(at) = self.stop_at() {
            // Bytes still in the decoder come after the stop string: dropped with it.
            self.decoder.finish();
            self.held.truncate(at);
            self.finish = Some(Finish::Stop);
            std::mem::take(&mut self.held)
        } else if self.tokens.len() >= self.max_tokens {
            self.end(Finish::MaxTokens)
        } else {
            self.pending = Some(t);
            self.release()
        };
        Ok(Some(Piece {
            token: t,
            eog: false,
            text,
        }))
    }

    /// Ends the generation for `why` and returns the rest of the text (the decoder's last bytes
    /// included, cut before a stop string they complete).
    fn end(&mut self, why: Finish) -> String {
        self.finish = Some(why);
        let rest = self.decoder.finish();
        self.held.push_str(&rest);
        if let Some(at) = self.stop_at() {
            self.held.truncate(at);
            self.finish = Some(Finish::Stop);
        }
        std::mem::take(&mut self.held)
    }

    /// Where the first stop string starts in the held text.
    fn stop_at(&self) -> Option<usize> {
        self.stop
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
    }

    /// Emits the held text up to the first point from which it could still grow into a stop
    /// string.
    fn release(&mut self) -> String {
        let keep_from = self
            .held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| self.stop.iter().any(|s| s.starts_with(&self.held[i..])))
            .unwrap_or(self.held.len());
        let rest = self.held.split_off(keep_from);
        std::mem::replace(&mut self.held, rest)
    }
}

/// The sampler's pick from `logits`, timed as the profile's sampling section: `top` (their
/// first largest, found by the LM head for a sampler that [picks the top][Sampler::picks_the_top])
/// when there is one.
fn sample(sampler: &mut Sampler, logits: &[f32], history: &[u32], top: Option<u32>) -> Result<u32> {
    let _t = profile::timer(Section::Sample);
    match top {
        Some(t) => Ok(t),
        None => sampler.sample(logits, history),
    }
}
