//! Wall time per section of the forward pass, for `npm run bench:profile`: where a token's
//! milliseconds go, measured in the browser that runs them (a sampling profiler there cannot see
//! into a worker's wasm, and one in Node runs another V8 on one thread only).
//!
//! Sections are timed on the thread that runs the pass. With a thread team a parallel section's
//! time is the leader's wall time, waiting for the team included, which is what shows a section
//! that does not scale; [`Profile::team`] adds how evenly the team shared the leader's loops and
//! how long the leader waited at their ends. Off by default: a timer then costs one thread-local
//! read. Per thread, not per session: two sessions stepped on one thread add into one profile.

use crate::clock::now_ms;
use crate::parallel;
use std::cell::RefCell;

pub use crate::parallel::TeamStats;

/// A part of the forward pass (and the sampler after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Token embedding rows.
    Embed,
    /// RMS norms before and after each block, and the residual adds.
    Norms,
    /// The Q, K, V matmuls (one job), activation quantizing included.
    Qkv,
    /// Biases, Q/K norms, RoPE, the Q scale and the KV-cache store.
    Rope,
    /// Softmax(Q·Kᵀ)·V over the cache.
    Attend,
    /// The attention output matmul.
    AttnOut,
    /// The gate and up matmuls (one job).
    GateUp,
    /// The gated activation.
    Activation,
    /// The down matmul.
    Down,
    /// Final norm and the LM head matmul.
    LmHead,
    /// Picking the next token from the logits.
    Sample,
}

impl Section {
    pub const ALL: [Section; 11] = [
        Section::Embed,
        Section::Norms,
        Section::Qkv,
        Section::Rope,
        Section::Attend,
        Section::AttnOut,
        Section::GateUp,
        Section::Activation,
        Section::Down,
        Section::LmHead,
        Section::Sample,
    ];

    /// Stable name (the JS profile's keys).
    pub fn name(self) -> &'static str {
        match self {
            Section::Embed => "embed",
            Section::Norms => "norms",
            Section::Qkv => "qkv",
            Section::Rope => "rope",
            Section::Attend => "attend",
            Section::AttnOut => "attnOut",
            Section::GateUp => "gateUp",
            Section::Activation => "activation",
            Section::Down => "down",
            Section::LmHead => "lmHead",
            Section::Sample => "sample",
        }
    }
}

/// Accumulated milliseconds, calls, weight bytes read and matmul operations per section, and
/// what the thread team did meanwhile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    ms: [f64; Section::ALL.len()],
    calls: [u64; Section::ALL.len()],
    bytes: [u64; Section::ALL.len()],
    ops: [u64; Section::ALL.len()],
    team: TeamStats,
}

impl Profile {
    pub fn ms(&self, s: Section) -> f64 {
        self.ms[s as usize]
    }

    pub fn calls(&self, s: Section) -> u64 {
        self.calls[s as usize]
    }

    /// Weight bytes the section's matmuls read, once per call (a prompt's tile loop reads them
    /// again from cache; this counts the matrix once): over `ms`, its read rate.
    pub fn weight_bytes(&self, s: Section) -> u64 {
        self.bytes[s as usize]
    }

    /// The section's matmul operations (2 per weight per token row): over `ms`, its compute rate.
    pub fn ops(&self, s: Section) -> u64 {
        self.ops[s as usize]
    }

    /// Sum over the sections.
    pub fn total_ms(&self) -> f64 {
        self.ms.iter().sum()
    }

    /// The parallel loops this thread led and its idle time at their ends (see [`TeamStats`]).
    pub fn team(&self) -> TeamStats {
        self.team
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Profile>> = const { RefCell::new(None) };
}

/// Starts (or restarts from zero) profiling on this thread.
pub fn start() {
    ACTIVE.with(|a| *a.borrow_mut() = Some(Profile::default()));
    parallel::measure_team(true);
}

/// What was measured since [`start`] or the last `take`, restarting from zero; `None` when not
/// profiling.
pub fn take() -> Option<Profile> {
    let team = parallel::take_team_stats().unwrap_or_default();
    ACTIVE
        .with(|a| a.borrow_mut().as_mut().map(std::mem::take))
        .map(|p| Profile { team, ..p })
}

/// Stops profiling on this thread, returning what was measured since the last [`take`].
pub fn stop() -> Option<Profile> {
    let p = take();
    ACTIVE.with(|a| *a.borrow_mut() = None);
    parallel::measure_team(false);
    p
}

/// Adds the time until it drops to its section (see [`timer`]).
pub(crate) struct Timer {
    section: Section,
    bytes: u64,
    ops: u64,
    t0: f64,
}

/// Whether this thread profiles (the check every timer makes first).
pub(crate) fn active() -> bool {
    ACTIVE.with(|a| a.borrow().is_some())
}

/// A timer for `section` when this thread profiles, else `None` (and nothing is read).
pub(crate) fn timer(section: Section) -> Option<Timer> {
    timer_matmul(section, 0, 0, 0)
}

/// [`timer`] for a section whose matmuls read `bytes` of weights holding `weights` weights, for
/// `rows` token rows.
pub(crate) fn timer_matmul(
    section: Section,
    bytes: usize,
    weights: usize,
    rows: usize,
) -> Option<Timer> {
    active().then(|| Timer {
        section,
        bytes: bytes as u64,
        ops: 2 * weights as u64 * rows as u64,
        t0: now_ms(),
    })
}

impl Drop for Timer {
    fn drop(&mut self) {
        let dt = now_ms() - self.t0;
        ACTIVE.with(|a| {
            if let Some(p) = a.borrow_mut().as_mut() {
                p.ms[self.section as usize] += dt;
                p.calls[self.section as usize] += 1;
                p.bytes[self.section as usize] += self.bytes;
                p.ops[self.section as usize] += self.ops;
            }
        });
    }
}
