//! Token sampling: greedy, and a seeded llama.cpp-style chain
//! repetition penalty → top-k → top-p → min-p → temperature → softmax → draw.
//!
//! Built for 262 144-entry logit vectors: top-k is a partial selection
//! (`select_nth_unstable_by`), top-p sorts only the growing prefix it needs, min-p is a linear
//! filter, and every buffer is kept in the [`Sampler`] so that after the first call no token
//! allocates.
//!
//! The random numbers come from xoshiro256** seeded through splitmix64 (so seed 0 is fine); the
//! same seed, logits and history reproduce a run exactly, on every target. (llama.cpp draws with
//! `std::mt19937`, so sampled runs are not expected to match llama.cpp token for token; greedy
//! runs are.)

use std::cmp::Ordering;

use crate::{Error, Result};

/// Sampling parameters. The filters are off at their neutral values: `top_k = 0`,
/// `top_p >= 1`, `min_p = 0`, `repeat_penalty = 1` or `repeat_last_n = 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplerConfig {
    /// Divides the logits before the final softmax; `<= 0` means greedy (first maximum).
    pub temperature: f32,
    /// Keep only the `top_k` highest logits (ties: lower id first); 0 = off.
    pub top_k: usize,
    /// Keep the smallest prefix (by probability, descending) whose mass is `>= top_p`; 1 = off.
    pub top_p: f32,
    /// Keep tokens with `p >= min_p * p_max`; 0 = off.
    pub min_p: f32,
    /// llama.cpp repetition penalty on the ids among the last `repeat_last_n` of the history:
    /// a positive logit is divided by it, any other multiplied; 1 = off.
    pub repeat_penalty: f32,
    /// How many of the most recent history ids the penalty looks at; 0 = off.
    pub repeat_last_n: usize,
    /// Seed of the random generator.
    pub seed: u64,
}

impl Default for SamplerConfig {
    /// `temperature 1.0, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1.0 (off),
    /// repeat_last_n 64, seed 0`: llama.cpp's CLI filters with an unscaled distribution.
    fn default() -> Self {
        SamplerConfig {
            temperature: 1.0,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: 0,
        }
    }
}

/// xoshiro256** (Blackman & Vigna), state filled by splitmix64 from the seed.
#[derive(Debug, Clone)]
struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Xoshiro256 {
            s: [next(), next(), next(), next()],
        }
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Stateful sampler: the configuration, the random generator and reusable buffers.
#[derive(Debug, Clone)]
pub struct Sampler {
    config: SamplerConfig,
    rng: Xoshiro256,
    /// The penalized logits.
    work: Vec<f32>,
    /// Candidates `(id, logit)` surviving the filters.
    cand: Vec<(u32, f32)>,
    /// Distinct penalized ids.
    seen: Vec<u32>,
    /// Unnormalized probabilities of the final candidates.
    weights: Vec<f32>,
}

/// Descending logit, ties by ascending id. Candidates never hold NaN and -0 is stored as +0, so
/// `total_cmp` agrees with IEEE comparison.
fn by_logit_desc(a: &(u32, f32), b: &(u32, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "Sampler::sample",
        reason,
    }
}

impl Sampler {
    pub fn new(config: SamplerConfig) -> Self {
        Sampler {
            config,
            rng: Xoshiro256::new(config.seed),
            work: Vec::new(),
            cand: Vec::new(),
            seen: Vec::new(),
            weights: Vec::new(),
        }
    }

    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// Restarts the random sequence from `seed` (and records it in the config).
    pub fn reseed(&mut self, seed: u64) {
        self.config.seed = seed;
        self.rng = Xoshiro256::new(seed);
    }

    /// Picks the next token from `logits` given the ids so far (`history`, for the repetition
    /// penalty; ids outside the logits are ignored).
    ///
    /// With `temperature <= 0` this is [`greedy`] over the penalized logits. Otherwise the
    /// filters of [`Sampler::candidates`] run, the survivors' logits are divided by the
    /// temperature, and one is drawn from their softmax. NaN logits are never picked; if the
    /// largest logit is infinite, the draw is uniform among the logits equal to it.
    ///
    /// Errors ([`Error::InvalidArgument`]): empty or all-NaN logits, a NaN or infinite
    /// temperature, a NaN `top_p`, a NaN or negative `min_p`, a non-finite or non-positive
    /// `repeat_penalty`.
    pub fn sample(&mut self, logits: &[f32], history: &[u32]) -> Result<u32> {
        self.prepare(logits, history)?;
        if self.config.temperature <= 0.0 {
            return greedy(&self.work).ok_or_else(|| invalid("every logit is NaN".into()));
        }
        self.filter()?;
        Ok(self.draw())
    }

    /// The candidate set `sample` would draw from, as `(id, penalized logit)` pairs in no
    /// particular order: after the repetition penalty, top-k, top-p and min-p, before the
    /// temperature (which only reshapes the distribution). Does not advance the random
    /// generator. Same errors as [`Sampler::sample`].
    pub fn candidates(&mut self, logits: &[f32], history: &[u32]) -> Result<&[(u32, f32)]> {
        self.prepare(logits, history)?;
        self.filter()?;
        Ok(&self.cand)
    }

    /// Validates the configuration and fills `work` with the penalized logits.
    fn prepare(&mut self, logits: &[f32], history: &[u32]) -> Result<()> {
        let c = self.config;
        if c.temperature.is_nan() || c.temperature.is_infinite() {
            return Err(invalid(format!(
                "temperature must be finite, got {}",
                c.temperature
            )));
        }
        if c.top_p.is_nan() {
            return Err(invalid("top_p is NaN".into()));
        }
        if c.min_p.is_nan() || c.min_p < 0.0 {
            return Err(invalid(format!("min_p must be >= 0, got {}", c.min_p)));
        }
        if !(c.repeat_penalty.is_finite() && c.repeat_penalty > 0.0) {
            return Err(invalid(format!(
                "repeat_penalty must be finite and > 0, got {}",
                c.repeat_penalty
            )));
        }
        if logits.is_empty() {
            return Err(invalid("logits are empty".into()));
        }
        if logits.len() > u32::MAX as usize {
            return Err(invalid(format!(
                "{} logits do not fit 32-bit token ids",
                logits.len()
            )));
        }
        self.work.clear();
        self.work.extend_from_slice(logits);
        if c.repeat_penalty != 1.0 && c.repeat_last_n > 0 {
            let recent = &history[history.len().saturating_sub(c.repeat_last_n)..];
            self.seen.clear();
            self.seen.extend(
                recent
                    .iter()
                    .copied()
                    .filter(|&id| (id as usize) < logits.len()),
            );
            self.seen.sort_unstable();
            self.seen.dedup();
            for &id in &self.seen {
                let l = &mut self.work[id as usize];
                if *l <= 0.0 {
                    *l *= c.repeat_penalty;
                } else {
                    *l /= c.repeat_penalty;
                }
            }
        }
        Ok(())
    }

    /// Builds `cand` from `work` and applies top-k, top-p and min-p.
    fn filter(&mut self) -> Result<()> {
        let c = self.config;
        self.cand.clear();
        self.cand.extend(
            self.work
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.is_nan())
                .map(|(i, &l)| (i as u32, l + 0.0)),
        );
        if self.cand.is_empty() {
            return Err(invalid("every logit is NaN".into()));
        }

        let mut max = self.max_logit();
        if max.is_infinite() {
            // Infinite logits have no softmax: keep the ones equal to the maximum (all of them
            // when every logit is -inf), which the draw then treats as equally likely.
            self.cand.retain(|&(_, l)| l == max);
        }

        // Top-k: partial selection, no sort.
        if c.top_k > 0 && c.top_k < self.cand.len() {
            self.cand.select_nth_unstable_by(c.top_k - 1, by_logit_desc);
            self.cand.truncate(c.top_k);
        }

        // Top-p: sort only as long a prefix as needed, growing it 4x at a time.
        if c.top_p < 1.0 && self.cand.len() > 1 && max.is_finite() {
            let total: f64 = self.cand.iter().map(|&(_, l)| (l - max).exp() as f64).sum();
            let target = c.top_p as f64 * total;
            let mut cum = 0.0f64;
            let mut sorted = 0;
            let mut chunk = 64;
            let mut keep = None;
            while keep.is_none() && sorted < self.cand.len() {
                let end = (sorted + chunk).min(self.cand.len());
                let rest = &mut self.cand[sorted..];
                if end < sorted + rest.len() {
                    rest.select_nth_unstable_by(end - sorted - 1, by_logit_desc);
                }
                rest[..end - sorted].sort_unstable_by(by_logit_desc);
                for i in sorted..end {
                    cum += (self.cand[i].1 - max).exp() as f64;
                    if cum >= target {
                        keep = Some(i + 1);
                        break;
                    }
                }
                sorted = end;
                chunk *= 4;
            }
            if let Some(k) = keep {
                self.cand.truncate(k);
            }
        }

        // Min-p: p_i >= min_p * p_max  <=>  l_i >= max + ln(min_p); the maximum always stays.
        if c.min_p > 0.0 {
            max = self.max_logit();
            let threshold = (max + c.min_p.ln()).min(max);
            self.cand.retain(|&(_, l)| l >= threshold);
        }
        Ok(())
    }

    fn max_logit(&self) -> f32 {
        self.cand
            .iter()
            .fold(f32::NEG_INFINITY, |m, &(_, l)| if l > m { l } else { m })
    }

    /// Temperature, softmax and the draw over the non-empty `cand`.
    fn draw(&mut self) -> u32 {
        let max = self.max_logit();
        let inv_t = 1.0 / self.config.temperature;
        self.weights.clear();
        if max.is_finite() {
            self.weights.extend(self.cand.iter().map(|&(_, l)| {
                let w = ((l - max) * inv_t).exp();
                if w.is_nan() {
                    0.0
                } else {
                    w
                }
            }));
        } else {
            self.weights.resize(self.cand.len(), 1.0);
        }
        let total: f64 = self.weights.iter().map(|&w| w as f64).sum();
        let target = self.rng.next_f64() * total;
        let mut acc = 0.0f64;
        let mut last = 0;
        for (i, &w) in self.weights.iter().enumerate() {
            if w <= 0.0 {
                continue;
            }
            acc += w as f64;
            last = i;
            if target < acc {
                return self.cand[i].0;
            }
        }
        // Rounding left the target at the very top: the last candidate with weight.
        self.cand[last].0
    }
}

/// The index of the first maximum of `logits` (ties → lowest id); NaN never wins. `None` for
/// empty or all-NaN logits.
pub fn greedy(logits: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_nan() {
            continue;
        }
        match best {
            Some((_, b)) if l <= b => {}
            _ => best = Some((i, l)),
        }
    }
    best.and_then(|(i, _)| u32::try_from(i).ok())
}
