//! The run after loading that makes the browser compile the code a first prompt needs.
//!
//! V8 runs a wasm function in its baseline tier until the function has done enough work, then
//! compiles optimised code for it on a background thread. A function that first did that much
//! work under a prompt was compiled while our threads computed: on two threads and two cores the
//! compiler then took a core from the prompt. Traced in Chromium
//! (`--trace-wasm-compilation-times`), after the earlier warm-up (an eight-token batch and one
//! decode step): 32 ms of optimising compiles in the first prompt (attention 16) and 64 ms in
//! the second (the tokenizer 35, the forward pass 27). With this one: 13, 3 and 9 ms in the
//! first three (kernels that only a full prompt makes hot), and in fresh engines on two threads
//! the first prompt prefilled at 778 tok/s against 736 and decoded at 214 against 205 (medians
//! of six), for 36 ms more loading. On one thread a spare core compiles beside the prompt
//! (its first prompt ran 2 % slower than its second), so there the warm-up stays short.
//!
//! With more threads the warm-up starts with 300 one-token passes of the model's miniature
//! (`miniature.rs`), which make the pass's driving code hot: on two threads the first prompt's
//! decode otherwise shared the cores with 22–25 ms of V8's optimising compiles (`run_jobs`,
//! `matmul_weights`, `transformer::attention` 9 …, traced with `--trace-wasm-compilation-times`),
//! with it 7–8 ms. In five A/Bs of fresh engines (medians of four to eight alternating runs)
//! the first prompt's decode ran 0.7–2.8 % faster in four, 2.6 % slower in one, and loading took
//! −3 to +57 ms longer (median +20); 200 more full-size decode passes instead (loading 2.5 s
//! instead of 1.5 from the page's start) gave the first prompt the later prompts' rate. On one
//! thread a spare core compiles beside the prompt, and the miniature only added ~100 ms of
//! loading.
//!
//! With more threads the warm-up ends with a batch and a few passes on the team: its own code
//! (how its loops hand out chunks, the matmul's job closures) runs only there. Without them, on
//! the Intel Xeon host of 2026-12-06 (fresh Chromium per run, two threads, medians of eight
//! interleaved runs), a first 106-token prompt prefilled at 0.91 of the same prompt's rate when
//! run again; with them 0.97 (595 → 636 tok/s), for ~50 ms more loading.

use super::chat::ChatMessage;
use super::generate::{GenerateConfig, Generation};
use super::miniature::Miniature;
use super::sampler::SamplerConfig;
use super::session::Session;
use super::Model;
use crate::error::Result;

/// One-token passes of the model's miniature (`miniature.rs`).
const MINIATURE_PASSES: usize = 300;
/// Positions of the miniature's cache.
const MINIATURE_CONTEXT: usize = 64;
/// Positions of the throwaway session (fewer where the model's context is shorter).
const CONTEXT: usize = 64;
/// Rows of the prompt-like batch.
const BATCH: usize = 8;
/// Decode-like passes without the LM head: they make attention hot (16 ms of compile).
const STEPS: usize = 6;
/// Decode-like passes the team runs last, after a batch of [`BATCH`] rows (with more threads).
const TEAM_STEPS: usize = 4;
/// Times the chat prompt is tokenized: three did not make the tokenizer hot, six did.
const ENCODES: usize = 6;
/// A user turn with words, numbers, punctuation and other scripts, so the tokenizer's common
/// paths all run.
const TEXT: &str = "What's the capital of France? Answer in one line, then count to 1,234 \
    (in words: one thousand two hundred thirty-four). Ünïcödé — 日本語のテキスト, ok?\n\n\
    Paris is the capital and most populous city of France, with 2,102,650 residents in 2023.";

/// Runs, on this thread alone, a batch and a two-token greedy generation (sampler, detokenizer,
/// stop strings) on a throwaway session; with more threads first the miniature's passes, also
/// the tokenizer on a chat prompt and decode-like passes, then a batch and decode-like passes on
/// the team.
pub(super) fn warm_up(model: &Model) -> Result<()> {
    let mut session = model.bare_session(CONTEXT)?;
    let room = session.capacity();
    let team = crate::parallel::num_threads() > 1;
    let (encodes, steps) = if team { (ENCODES, STEPS) } else { (0, 0) };
    // A tiny context takes fewer rows: the batch, the steps, a prompt token and a decoded one.
    let batch = room.saturating_sub(steps + 2).clamp(1, BATCH);
    let steps = room.saturating_sub(batch + 2).min(steps);
    crate::parallel::alone(|| {
        if team {
            let mut miniature = Miniature::of(model.config(), model.weights(), MINIATURE_CONTEXT)?;
            miniature.run(MINIATURE_PASSES)?;
            exponentials();
        }
        let chat = [ChatMessage::new("user", TEXT)];
        for _ in 0..encodes {
            // A template that fails to render fails the first chat, not loading.
            let _ = model.chat_format().tokens(&chat, true, None);
        }
        passes(model, &mut session, batch, steps)?;
        if room < batch + steps + 2 {
            return Ok(());
        }
        let mut ids = session.tokens().to_vec();
        ids.push(0);
        let cfg = GenerateConfig {
            max_tokens: 2,
            stop: vec!["\n\n".into()],
            sampler: SamplerConfig {
                temperature: 0.0,
                ..Default::default()
            },
        };
        let mut generation = Generation::start(model, &mut session, &ids, cfg)?;
        while generation.step(model, &mut session)?.is_some() {}
        Ok(())
    })?;
    if team && session.tokens().len() + BATCH + TEAM_STEPS <= room {
        passes(model, &mut session, BATCH, TEAM_STEPS)?;
    }
    Ok(())
}

/// Calls of libm's `expf` that make it hot: attention's softmax takes the positions past a row's
/// last whole four through it, ~11,000 times in a 106-token prompt of Gemma 3 270M, far more than
/// the warm-up's short rows do. Without these, V8 optimised it 60 ms into the first prompt
/// (traced with `--trace-wasm-compilation-times`), which ran it in the baseline tier meanwhile.
const EXPONENTIALS: usize = 32_768;

/// [`EXPONENTIALS`] calls of `f32::exp` over softmax-like arguments (≤ 0).
fn exponentials() {
    let mut sum = 0.0f32;
    for i in 0..EXPONENTIALS {
        sum += std::hint::black_box(-(i as f32) / 1024.0).exp();
    }
    std::hint::black_box(sum);
}

/// A batch of `rows` (at most [`BATCH`]) tokens, then `steps` one-token passes: keys and values
/// only, no LM head.
fn passes(model: &Model, session: &mut Session, rows: usize, steps: usize) -> Result<()> {
    session.eval_layers(model, &[0; BATCH][..rows.min(BATCH)])?;
    for _ in 0..steps {
        session.eval_layers(model, &[0])?;
    }
    Ok(())
}
