//! Token sampling: greedy, and a seeded llama.cpp-style chain
//! repetition penalty → top-k → top-p → min-p → temperature → softmax → draw.
//!
//! Built for 262 144-entry logit vectors, with no full sort anywhere: top-k is one pass over a
//! bounded buffer cut down with `select_nth_unstable_by`, top-p buckets by logit and then
//! quickselects on probability mass (O(n)), min-p is a linear filter, the logits are only copied
//! when a repetition penalty applies, and every buffer lives in the [`Sampler`] so that after
//! the first call sampling a token allocates nothing.
//!
//! The random numbers come from xoshiro256** seeded through splitmix64 (so seed 0 is fine); the
//! same seed, logits and history reproduce a run exactly, on every target. (llama.cpp draws with
//! `std::mt19937`, so sampled runs are not expected to match llama.cpp token for token; greedy
//! runs are.)

use std::cmp::Ordering;

use crate::ops::kernels;
use crate::storage::{try_refill, try_reserve, try_with_capacity};
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

impl SamplerConfig {
    /// Errors unless every setting means something: a finite temperature (`<= 0` is greedy),
    /// `top_p` in [0, 1], `min_p >= 0` (from 1 on only the best token stays), a finite positive
    /// repetition penalty. The one place these
    /// ranges live: the sampler checks them before each draw, the bindings when a config is set.
    pub fn validate(&self) -> Result<()> {
        let unit = |name: &str, v: f32| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(invalid(format!("{name} must be in [0, 1], got {v}")))
            }
        };
        if !self.temperature.is_finite() {
            return Err(invalid(format!(
                "temperature must be finite, got {}",
                self.temperature
            )));
        }
        unit("top_p", self.top_p)?;
        if self.min_p.is_nan() || self.min_p < 0.0 {
            return Err(invalid(format!("min_p must be >= 0, got {}", self.min_p)));
        }
        if !(self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0) {
            return Err(invalid(format!(
                "repeat_penalty must be finite and > 0, got {}",
                self.repeat_penalty
            )));
        }
        Ok(())
    }
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
    /// The penalized logits (only filled when a penalty applies).
    work: Vec<f32>,
    /// Candidates surviving the filters.
    cand: Vec<Cand>,
    /// Distinct penalized ids.
    seen: Vec<u32>,
    /// Unnormalized probabilities of the final candidates.
    weights: Vec<f32>,
}

/// A candidate token: its (penalized) logit and, during top-p, its unnormalized probability.
#[derive(Debug, Clone, Copy)]
struct Cand {
    id: u32,
    logit: f32,
    w: f32,
}

impl Cand {
    /// NaN is never a candidate; -0 is stored as +0 so that `total_cmp` agrees with IEEE `<`.
    fn new(id: usize, logit: f32) -> Cand {
        Cand {
            id: id as u32,
            logit: logit + 0.0,
            w: 0.0,
        }
    }
}

/// Descending logit, ties by ascending id.
fn by_logit_desc(a: &Cand, b: &Cand) -> Ordering {
    b.logit.total_cmp(&a.logit).then(a.id.cmp(&b.id))
}

fn invalid(reason: String) -> Error {
    Error::InvalidArgument {
        op: "Sampler::sample",
        reason,
    }
}

/// Candidates at or below this size are simply sorted.
const SMALL: usize = 64;

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
        let penalized = self.prepare(logits, history)?;
        let src: &[f32] = if penalized { &self.work } else { logits };
        if self.config.temperature <= 0.0 {
            return greedy(src).ok_or_else(|| invalid("every logit is NaN".into()));
        }
        filter(&self.config, src, &mut self.cand)?;
        draw(
            &mut self.rng,
            &mut self.weights,
            &self.cand,
            self.config.temperature,
        )
    }

    /// Whether [`Sampler::sample`] returns the first largest logit whatever the history: a
    /// valid greedy configuration without a repetition penalty. A generation then takes the
    /// index the LM head found (`Logits::LastAndTop`) instead of sampling.
    pub fn picks_the_top(&self) -> bool {
        let c = &self.config;
        let plain = c.temperature <= 0.0 && (c.repeat_penalty == 1.0 || c.repeat_last_n == 0);
        plain && c.validate().is_ok()
    }

    /// The candidate set `sample` would draw from, as `(id, penalized logit)` pairs in no
    /// particular order: after the repetition penalty, top-k, top-p and min-p, before the
    /// temperature (which only reshapes the distribution). An inspection hook (it allocates the
    /// returned vector); it does not advance the random generator. Same errors as
    /// [`Sampler::sample`].
    pub fn candidates(&mut self, logits: &[f32], history: &[u32]) -> Result<Vec<(u32, f32)>> {
        let penalized = self.prepare(logits, history)?;
        let src: &[f32] = if penalized { &self.work } else { logits };
        filter(&self.config, src, &mut self.cand)?;
        let mut out = try_with_capacity(self.cand.len())?;
        out.extend(self.cand.iter().map(|c| (c.id, c.logit)));
        Ok(out)
    }

    /// Validates the configuration and the logits. When the repetition penalty applies, fills
    /// `work` with the penalized logits and returns true; otherwise the logits are used as they
    /// are.
    fn prepare(&mut self, logits: &[f32], history: &[u32]) -> Result<bool> {
        let c = self.config;
        c.validate()?;
        if logits.is_empty() {
            return Err(invalid("logits are empty".into()));
        }
        if logits.len() > u32::MAX as usize {
            return Err(invalid(format!(
                "{} logits do not fit 32-bit token ids",
                logits.len()
            )));
        }
        if c.repeat_penalty == 1.0 || c.repeat_last_n == 0 {
            return Ok(false);
        }
        let recent = &history[history.len().saturating_sub(c.repeat_last_n)..];
        self.seen.clear();
        try_reserve(&mut self.seen, recent.len())?;
        self.seen.extend(
            recent
                .iter()
                .copied()
                .filter(|&id| (id as usize) < logits.len()),
        );
        if self.seen.is_empty() {
            return Ok(false);
        }
        self.seen.sort_unstable();
        self.seen.dedup();
        try_refill(&mut self.work, logits)?;
        for &id in &self.seen {
            let l = &mut self.work[id as usize];
            if *l <= 0.0 {
                *l *= c.repeat_penalty;
            } else {
                *l /= c.repeat_penalty;
            }
        }
        Ok(true)
    }
}

/// Logits [`top_k`] looks at together.
const TOP_K_BLOCK: usize = 256;

/// Fills `cand` from `logits` (NaN dropped, -0 stored as +0) and applies top-k, top-p and min-p.
fn filter(c: &SamplerConfig, logits: &[f32], cand: &mut Vec<Cand>) -> Result<()> {
    cand.clear();
    let k = c.top_k;
    if k > 0 && k < logits.len() {
        top_k(logits, k, cand)?;
    } else {
        try_reserve(cand, logits.len())?;
        cand.extend(
            logits
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.is_nan())
                .map(|(i, &l)| Cand::new(i, l)),
        );
    }
    if cand.is_empty() {
        return Err(invalid("every logit is NaN".into()));
    }

    let max = max_logit(cand);
    if max.is_infinite() {
        // Infinite logits have no softmax: keep the ones equal to the maximum (all of them
        // when every logit is -inf), which the draw then treats as equally likely.
        cand.retain(|c| c.logit == max);
        return Ok(());
    }
    if c.top_p < 1.0 {
        top_p(cand, c.top_p, max);
    }
    // Min-p: p_i >= min_p * p_max  <=>  l_i >= max + ln(min_p); the maximum always stays.
    if c.min_p > 0.0 {
        let threshold = (max + c.min_p.ln()).min(max);
        cand.retain(|c| c.logit >= threshold);
    }
    Ok(())
}

/// The `k` highest logits (ties: lower id first, NaN dropped) into `cand`, in one pass over a
/// bounded buffer: whenever it holds `cap` entries it is cut to the best k, and the k-th logit
/// becomes a bar later entries must beat. Entries come in ascending id order, so one equal to
/// the bar ranks below the k-th and can be skipped; once the bar is up, few blocks of
/// [`TOP_K_BLOCK`] hold a logit above it, and one vector pass skips the rest. Over Gemma 3's
/// 262,144 logits the default chain's pick took 0.26–0.41 ms a token in Chromium with each
/// logit compared in turn, 0.12–0.15 with the blocks (in cache; 64- and 1,024-logit blocks
/// measured slower).
fn top_k(logits: &[f32], k: usize, cand: &mut Vec<Cand>) -> Result<()> {
    let cap = (2 * k).max(SMALL);
    try_reserve(cand, cap.min(logits.len()))?;
    let mut bar: Option<f32> = None;
    for (n, block) in logits.chunks(TOP_K_BLOCK).enumerate() {
        // NaN, never a candidate, is no block's maximum either.
        if bar.is_some_and(|b| kernels::max_non_nan(block) <= b) {
            continue;
        }
        for (j, &l) in block.iter().enumerate() {
            if l.is_nan() || bar.is_some_and(|b| l <= b) {
                continue;
            }
            cand.push(Cand::new(n * TOP_K_BLOCK + j, l));
            if cand.len() >= cap {
                cand.select_nth_unstable_by(k - 1, by_logit_desc);
                cand.truncate(k);
                bar = Some(cand[k - 1].logit);
            }
        }
    }
    if cand.len() > k {
        cand.select_nth_unstable_by(k - 1, by_logit_desc);
        cand.truncate(k);
    }
    Ok(())
}

/// Keeps the smallest set of highest logits whose softmax mass reaches `p` (at least one).
///
/// No full sort. `cand[..lo]` is known to be inside the set (its mass is `cum`) and the cut can
/// only fall in `cand[lo..hi]`:
///
/// 1. large sets are first bucketed by logit (1024 equal-width buckets, monotone in the logit,
///    so equal logits share a bucket): one pass finds the bucket where the cumulative mass
///    crosses `p`, and a partition moves the buckets above it to the front;
/// 2. quickselect on mass then narrows the range: each step partitions it around its top `m`
///    entries and keeps the part holding the cut (the first step without bucketing tries the
///    top 64, where a peaked LLM distribution ends; later steps halve);
/// 3. a range of at most 64 entries is sorted and walked.
///
/// Everything is O(n), and ties are broken by id exactly as a full sort would.
fn top_p(cand: &mut Vec<Cand>, p: f32, max: f32) {
    let mut total = 0.0f64;
    let mut min = max;
    for c in cand.iter_mut() {
        c.w = (c.logit - max).exp();
        total += c.w as f64;
        if c.logit < min && c.logit.is_finite() {
            min = c.logit;
        }
    }
    let target = p as f64 * total;
    let mass = |c: &[Cand]| -> f64 { c.iter().map(|c| c.w as f64).sum() };
    let mut cum = 0.0f64;
    let (mut lo, mut hi) = (0, cand.len());
    let mut first = true;

    const BUCKETS: usize = 1024;
    let scale = BUCKETS as f32 / (max - min);
    if cand.len() > 16 * SMALL && min < max && scale.is_finite() {
        // Bucket 0 holds the highest logits; -inf lands in the last bucket.
        let bucket = |l: f32| (((max - l) * scale) as usize).min(BUCKETS - 1);
        let mut masses = [0.0f64; BUCKETS];
        for c in cand.iter() {
            masses[bucket(c.logit)] += c.w as f64;
        }
        let mut cut = BUCKETS - 1;
        for (b, &m) in masses.iter().enumerate() {
            if cum + m >= target || b == BUCKETS - 1 {
                cut = b;
                break;
            }
            cum += m;
        }
        // Partition: the buckets above the cut to the front, then the cut bucket.
        let mut w = 0;
        for r in 0..cand.len() {
            if bucket(cand[r].logit) < cut {
                cand.swap(w, r);
                w += 1;
            }
        }
        lo = w;
        for r in lo..cand.len() {
            if bucket(cand[r].logit) == cut {
                cand.swap(w, r);
                w += 1;
            }
        }
        hi = w;
        first = false;
    }

    loop {
        let len = hi - lo;
        if len <= SMALL {
            cand[lo..hi].sort_unstable_by(by_logit_desc);
            for i in lo..hi {
                cum += cand[i].w as f64;
                if cum >= target {
                    cand.truncate(i + 1);
                    return;
                }
            }
            // Rounding kept the mass just below the target: everything up to `hi` stays.
            cand.truncate(hi);
            return;
        }
        let m = if first { SMALL } else { len / 2 };
        first = false;
        cand[lo..hi].select_nth_unstable_by(m - 1, by_logit_desc);
        let upper = mass(&cand[lo..lo + m]);
        if cum + upper >= target {
            hi = lo + m;
        } else {
            cum += upper;
            lo += m;
        }
    }
}

fn max_logit(cand: &[Cand]) -> f32 {
    cand.iter().fold(
        f32::NEG_INFINITY,
        |m, c| if c.logit > m { c.logit } else { m },
    )
}

/// Temperature, softmax and the draw over the non-empty `cand`.
fn draw(
    rng: &mut Xoshiro256,
    weights: &mut Vec<f32>,
    cand: &[Cand],
    temperature: f32,
) -> Result<u32> {
    let max = max_logit(cand);
    let inv_t = 1.0 / temperature;
    weights.clear();
    try_reserve(weights, cand.len())?;
    if max.is_finite() {
        weights.extend(cand.iter().map(|c| {
            let w = ((c.logit - max) * inv_t).exp();
            if w.is_nan() {
                0.0
            } else {
                w
            }
        }));
    } else {
        weights.resize(cand.len(), 1.0);
    }
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    let target = rng.next_f64() * total;
    let mut acc = 0.0f64;
    let mut last = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w <= 0.0 {
            continue;
        }
        acc += w as f64;
        last = i;
        if target < acc {
            return Ok(cand[i].id);
        }
    }
    // Rounding left the target at the very top: the last candidate with weight.
    Ok(cand[last].id)
}

/// The index of the first maximum of `logits` (ties → lowest id); NaN never wins. `None` for
/// empty or all-NaN logits.
pub fn greedy(logits: &[f32]) -> Option<u32> {
    u32::try_from(crate::ops::kernels::argmax(logits)?).ok()
}
