//! One sequence being evaluated: its KV cache, scratch buffers and the tokens the cache holds —
//! with prefix reuse across requests and a byte format to save and restore it.
//!
//! Reuse is sound because a cached position depends only on the tokens at and before it: after
//! [`Session::truncate`] the first `n` positions are exactly what a fresh evaluation of those
//! tokens would store, and later writes overwrite the rest.

use half::f16;

use super::kv_cache::KvCache;
use super::transformer::{self, Logits, Scratch};
use super::Model;
use crate::error::{Error, Result};
use crate::storage::try_with_capacity;

pub struct Session {
    cache: KvCache,
    scratch: Scratch,
    tokens: Vec<u32>,
}

/// The most prompt tokens per forward pass (see [`Session::eval`], [`prefill_chunk`]): 128 rows
/// of quantized activations (256 KB at the widest, `n_ff` 2048) fit in a core's L2 beside the
/// weight block being read.
pub const PREFILL_CHUNK: usize = 128;

/// Prompt tokens per forward pass: [`PREFILL_CHUNK`], on one thread half of it. On the AMD EPYC
/// host of 2026-12-07 (1 MB of L2 a core) one thread prefilled the 1,060-token prompt at 278–285
/// tok/s in passes of 64 against 258–271 in passes of 128, the 106-token one (then 64 + 42 rows)
/// alike, 341–362 against 332–354 (fresh engines in Chromium, six runs each); the gate/up section
/// made the difference (1.14 against 1.27–1.33 ms a prompt token in the section profile). Two
/// threads' gate/up ran as fast either way (0.60–0.61 ms), so they keep the 106-token prompt in
/// one pass.
pub fn prefill_chunk() -> usize {
    if crate::parallel::num_threads() > 1 {
        PREFILL_CHUNK
    } else {
        PREFILL_CHUNK / 2
    }
}

impl Session {
    /// A session whose cache rows for up to [`PREFILL_CHUNK`] tokens and buffers for a first
    /// pass ([`prefill_chunk`]) are written now ([`Scratch::reserve`]), so a prompt that long
    /// takes no page faults: creating the session is the allocation anyway, and the engine
    /// creates it while loading.
    pub(super) fn new(model: &Model, context: usize) -> Result<Session> {
        let mut session = Session::bare(model, context)?;
        let (cfg, w) = (model.config(), model.weights());
        let (positions, rows) = (context.min(PREFILL_CHUNK), context.min(prefill_chunk()));
        session.cache.reserve_positions(positions)?;
        session.scratch.reserve(cfg, w, rows, context)?;
        Ok(session)
    }

    /// A session that writes only what its passes need: the warm-up's throwaway one, whose
    /// pages stay resident once it is dropped (reserving a first pass there cost the engine 4–5
    /// MiB more memory in bench:e2e).
    pub(super) fn bare(model: &Model, context: usize) -> Result<Session> {
        let cfg = model.config();
        Ok(Session {
            cache: KvCache::new(cfg.n_layer, context, cfg.kv_dim())?,
            scratch: Scratch::default(),
            tokens: Vec::new(),
        })
    }

    /// Evaluates `tokens` after the ones already in the cache and returns the logits asked for
    /// (`[1, vocab]` but for [`Logits::All`]). For the last token's, a long prompt runs in
    /// passes of [`prefill_chunk`] tokens: every row and attention query is computed as in one
    /// pass (the same bits), but a pass's activations stay in cache — a 1,060-token pass
    /// streamed its 2 MB of quantized activations from memory once per weight block, which
    /// halved two threads' matmul rate — and the scratch is sized for a chunk, not the prompt.
    pub fn eval(&mut self, model: &Model, tokens: &[u32], which: Logits) -> Result<&[f32]> {
        // Checked before the first chunk, so a prompt that cannot fit changes nothing (a later
        // error leaves the chunks before it in the cache, with their tokens).
        let end = self.tokens.len().saturating_add(tokens.len());
        if end > self.cache.capacity() {
            return Err(Error::ContextFull {
                needed: end,
                capacity: self.cache.capacity(),
            });
        }
        let mut rest = tokens;
        if which != Logits::All {
            let chunk = prefill_chunk();
            while rest.len() > chunk {
                let (chunk, tail) = rest.split_at(chunk);
                self.eval_layers(model, chunk)?;
                rest = tail;
            }
        }
        self.pass(rest, |cache, s, pos0| {
            transformer::forward(model.config(), model.weights(), cache, s, rest, pos0, which)
        })
    }

    /// [`Session::eval`] of the last token's logits, returning them beside the tokens the cache
    /// now holds (a sampler's history), both borrowed at once, and with `top` the index of the
    /// first largest logit ([`Logits::LastAndTop`]; `None` without `top` or when all are NaN): a
    /// generation samples straight from the scratch instead of copying a vocabulary of logits
    /// (1 MB for Gemma 3) per token, and a greedy one need not read them at all.
    pub fn eval_last(
        &mut self,
        model: &Model,
        tokens: &[u32],
        top: bool,
    ) -> Result<(&[f32], &[u32], Option<u32>)> {
        let which = if top {
            Logits::LastAndTop
        } else {
            Logits::Last
        };
        let len = self.eval(model, tokens, which)?.len();
        Ok((self.scratch.logits(len), &self.tokens, self.scratch.top()))
    }

    /// Evaluates `tokens` after the ones in the cache for their keys and values only (no LM
    /// head, no logits): a long prompt's leading chunks, and the warm-up's passes.
    pub(super) fn eval_layers(&mut self, model: &Model, tokens: &[u32]) -> Result<()> {
        self.pass(tokens, |cache, s, pos0| {
            transformer::layers(model.config(), model.weights(), cache, s, tokens, pos0, 0)
        })
    }

    /// Runs `forward(cache, scratch, pos0)`, a forward pass over `tokens` at the next positions,
    /// on one thread team, then records the tokens.
    fn pass<'a, T>(
        &'a mut self,
        tokens: &[u32],
        forward: impl FnOnce(&mut KvCache, &'a mut Scratch, usize) -> Result<T>,
    ) -> Result<T> {
        let pos0 = self.tokens.len();
        let (cache, scratch) = (&mut self.cache, &mut self.scratch);
        // One team of threads for the whole pass: its ~130 parallel loops then start in
        // microseconds instead of waking the pool each time.
        let out = crate::parallel::with_team(move || forward(cache, scratch, pos0))?;
        crate::storage::try_reserve(&mut self.tokens, tokens.len())?;
        self.tokens.extend_from_slice(tokens);
        Ok(out)
    }

    /// Makes the cache hold `ids` and returns the last position's logits and how many of
    /// `ids` were already there: the longest common prefix of `ids` and [`Session::tokens`]
    /// stays (at most all but the last id, whose logits are needed), the rest is evaluated.
    pub fn prefill_reusing(&mut self, model: &Model, ids: &[u32]) -> Result<(&[f32], usize)> {
        if ids.is_empty() {
            return Err(Error::InvalidArgument {
                op: "prefill",
                reason: "the prompt has no tokens".into(),
            });
        }
        let common = self.common_prefix(ids).min(ids.len() - 1);
        self.truncate(common);
        let logits = self.eval(model, &ids[common..], Logits::Last)?;
        Ok((logits, common))
    }

    /// How many leading ids of `ids` the cache already holds.
    pub fn common_prefix(&self, ids: &[u32]) -> usize {
        self.tokens
            .iter()
            .zip(ids)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Keeps the first `n` positions (no-op when the cache holds fewer).
    pub fn truncate(&mut self, n: usize) {
        self.tokens.truncate(n);
    }

    /// Tokens the cache holds, in position order.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Positions the cache holds.
    pub fn capacity(&self) -> usize {
        self.cache.capacity()
    }

    /// Forgets the sequence (the cache is overwritten from position 0).
    pub fn reset(&mut self) {
        self.tokens.clear();
    }

    /// The session as bytes: a header naming the model, the tokens, and each layer's keys and
    /// values for the used positions as f16 (lossless: the cache rounds through f16 on the way
    /// in), then a checksum. See [`Session::load`].
    pub fn save(&self, model: &Model) -> Result<Vec<u8>> {
        let (n, kv_dim, n_layer) = (self.tokens.len(), self.cache.kv_dim(), self.cache.n_layer());
        let rows = n
            .checked_mul(kv_dim)
            .and_then(|r| r.checked_mul(2 * n_layer))
            .ok_or_else(|| Error::overflow("saved session", &[n, kv_dim, 2 * n_layer]))?;
        let size = (HEADER + 8)
            .checked_add(4 * n)
            .and_then(|s| s.checked_add(2 * rows))
            .ok_or_else(|| Error::overflow("saved session", &[rows, 2]))?;
        let mut out: Vec<u8> = try_with_capacity(size)?;
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&model.fingerprint().to_le_bytes());
        for v in [n_layer, kv_dim, n] {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
        self.tokens
            .iter()
            .for_each(|t| out.extend_from_slice(&t.to_le_bytes()));
        for il in 0..n_layer {
            for p in 0..n {
                for row in [self.cache.key(il, p), self.cache.value(il, p)] {
                    row.iter()
                        .for_each(|&x| out.extend_from_slice(&f16::from_f32(x).to_le_bytes()));
                }
            }
        }
        out.extend_from_slice(&fnv1a(&out).to_le_bytes());
        Ok(out)
    }

    /// Restores what [`Session::save`] wrote. Errors: [`Error::SessionMismatch`] when the bytes
    /// belong to another model or do not fit this session's context, [`Error::InvalidSession`]
    /// when they are not a saved session or were damaged (checked before anything changes).
    pub fn load(&mut self, model: &Model, bytes: &[u8]) -> Result<()> {
        let body = check_envelope(bytes)?;
        if read_u64(body, 8) != model.fingerprint() {
            return Err(Error::SessionMismatch {
                reason: "the session was saved with another model file".into(),
            });
        }
        let (n_layer, kv_dim, n) = (read_u32(body, 16), read_u32(body, 20), read_u32(body, 24));
        if (n_layer, kv_dim) != (self.cache.n_layer(), self.cache.kv_dim()) {
            return Err(invalid_session(
                "layer count or key/value width differ from the model's",
            ));
        }
        if n > self.capacity() {
            return Err(Error::SessionMismatch {
                reason: format!(
                    "the session holds {n} positions; this context holds {}",
                    self.capacity()
                ),
            });
        }
        let row_bytes = 2 * kv_dim;
        let expected = (n as u64) * (4 + 2 * row_bytes as u64 * n_layer as u64);
        if (body.len() - HEADER) as u64 != expected {
            return Err(invalid_session("its length does not match its header"));
        }
        let mut tokens: Vec<u32> = try_with_capacity(n)?;
        let ids = &body[HEADER..HEADER + 4 * n];
        tokens.extend(ids.chunks_exact(4).map(|b| read_u32(b, 0) as u32));
        if let Some(&bad) = tokens
            .iter()
            .find(|&&t| t as usize >= model.config().n_vocab)
        {
            return Err(invalid_session(&format!(
                "token id {bad} is outside the vocabulary"
            )));
        }
        let mut rows = body[HEADER + 4 * n..].chunks_exact(row_bytes);
        let mut k = try_with_capacity::<f32>(kv_dim)?;
        let mut v = try_with_capacity::<f32>(kv_dim)?;
        for il in 0..n_layer {
            for p in 0..n {
                for (dst, src) in [(&mut k, rows.next()), (&mut v, rows.next())] {
                    dst.clear();
                    let src = src.unwrap_or_default();
                    dst.extend(
                        src.chunks_exact(2)
                            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()),
                    );
                }
                self.cache.store(il, p, &k, &v)?;
            }
        }
        self.tokens = tokens;
        Ok(())
    }
}

/// `KPTSESS` + format version 1.
const MAGIC: &[u8; 8] = b"KPTSESS\x01";
/// Magic, fingerprint, then `n_layer`, `kv_dim`, `n_tokens` as u32.
const HEADER: usize = 8 + 8 + 3 * 4;

/// The body of a saved session (everything but the checksum) once its magic, length and
/// checksum are right.
fn check_envelope(bytes: &[u8]) -> Result<&[u8]> {
    if bytes.len() < HEADER + 8 || &bytes[..8] != MAGIC {
        return Err(invalid_session(
            "not a saved kopitiam session (magic or version differs)",
        ));
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if read_u64(sum, 0) != fnv1a(body) {
        return Err(invalid_session(
            "its checksum does not match (the bytes were changed)",
        ));
    }
    Ok(body)
}

fn invalid_session(reason: &str) -> Error {
    Error::InvalidSession {
        reason: reason.into(),
    }
}

fn read_u32(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// 64-bit FNV-1a: a checksum against damage, not an authenticator.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Names a model file: FNV-1a of its header (metadata and tensor table, everything before the
/// data) mixed with the file length, so another file — or another quantization — differs.
pub(crate) fn file_fingerprint(head: &[u8], file_len: usize) -> u64 {
    fnv1a(head) ^ (file_len as u64).rotate_left(32)
}
