//! The one place that knows about threads.
//!
//! Natively the pool is rayon's global pool. In the browser the single-thread build runs
//! everything inline; the threaded build (`threads` feature) runs rayon on wasm-bindgen-rayon's
//! Web Worker pool, which JavaScript starts with `await startThreads(n)` (or `initThreadPool`)
//! before the first op.
//! Work is split so that each output element is written by exactly one thread in a fixed order,
//! so results are bit-identical whatever the number of threads.
//!
//! A forward pass issues ~70 small parallel loops per token. Handing each to rayon means waking
//! sleeping workers (about a millisecond per call in Chromium, measured) each time, so inside
//! [`with_team`] the calling thread leads and `threads − 1` helpers spin on an atomic generation
//! counter, picking up each loop within a microsecond, as llama.cpp's threadpool does.
//!
//! In the browser, `startThreads(n)` ([`set_width`]) starts only `n − 1` workers: the calling
//! thread is the n-th and leads every loop, the plain ones too. Each Web Worker is a V8 isolate
//! of its own (~5 MiB of the tab, measured), so a pool that also covered the caller would keep
//! one asleep for nothing.

#[cfg(all(target_arch = "wasm32", feature = "threads"))]
use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads that compute as `startThreads(n)` set them (the caller plus `n − 1` pool workers);
/// 0 when the pool was started with `initThreadPool` and every pool thread counts.
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
static WIDTH: AtomicUsize = AtomicUsize::new(0);

/// Makes `n` the number of threads that compute: the calling thread and the `n − 1` workers of
/// a pool started for them (`startThreads(n)` in the bindings). Only once: `false` (and nothing
/// changed) when a width was set before, since the pool it was set for cannot be restarted.
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
pub fn set_width(n: usize) -> bool {
    WIDTH
        .compare_exchange(0, n.max(1), Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// How many threads work may be split over.
///
/// In the threaded wasm build, call `startThreads(n)` (or `initThreadPool(n)`) before the first
/// op: rayon's pool is global, and touching it first makes rayon settle for one thread on the
/// current one.
pub fn num_threads() -> usize {
    #[cfg(all(target_arch = "wasm32", feature = "threads"))]
    {
        match WIDTH.load(Ordering::SeqCst) {
            0 => rayon::current_num_threads(),
            n => n,
        }
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        1
    }
}

/// A small number naming the current thread among those that run parallel work: `0` for a
/// thread outside the pool, `1 + index` for pool threads; below `num_threads() + 1`. For
/// per-thread scratch buffers.
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // used by the model only
pub fn thread_slot() -> usize {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    {
        rayon::current_thread_index().map_or(0, |i| i + 1)
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        0
    }
}

/// What the thread team did for the parallel loops a leader ran while [`measure_team`] was on
/// (all zero on one thread): how evenly the chunks spread, and how long the leader stood idle
/// at the end of its loops, which is time a token's parallel sections lose to the split.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TeamStats {
    /// Parallel loops the team ran.
    pub jobs: u64,
    /// Their chunks, and how many of those the helpers ran.
    pub chunks: u64,
    pub helper_chunks: u64,
    /// Milliseconds the leader waited for helpers after running out of chunks.
    pub wait_ms: f64,
}

/// Starts (from zero) or stops tallying [`TeamStats`] for the loops this thread leads.
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // used by the model's profile only
pub fn measure_team(on: bool) {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    team::TALLY.with(|t| t.set(on.then(TeamStats::default)));
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    let _ = on;
}

/// The tally since [`measure_team`] or the last `take_team_stats`, restarting from zero;
/// `None` when not measuring.
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // used by the model's profile only
pub fn take_team_stats() -> Option<TeamStats> {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    {
        team::TALLY.with(|t| t.replace(t.get().map(|_| TeamStats::default())))
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        None
    }
}

/// Calls `f(chunk_index, chunk)` for consecutive `chunk_len`-sized pieces of `data` (the last
/// may be shorter), in parallel where threads exist. Each element is written by one call, so the
/// result does not depend on the number of threads.
pub fn for_each_chunk_mut<T, F>(data: &mut [T], chunk_len: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync + Send,
{
    chunks(data, chunk_len.max(1), &f);
}

/// [`for_each_chunk_mut`] out of line, with `f` behind a `dyn`: a loop's body is then one
/// function whatever path runs it, and its caller holds one call. Inlined, the team's set-up
/// and a serial copy of each body made the forward pass's per-layer functions large, and V8
/// optimises those under a first prompt, taking a core from it (traced in Chromium on two
/// threads: the attention block's compile 10.1 → 3.5 ms, the first prompt's 28–31 → 22–23 ms).
#[inline(never)]
fn chunks<T: Send>(data: &mut [T], chunk_len: usize, f: &(dyn Fn(usize, &mut [T]) + Sync)) {
    // One thread of compute (`startThreads(1)` too) runs inline: handing each loop to the idle
    // pool worker and back cost the threaded build a quarter of its decode rate (measured).
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    if !is_alone() && num_threads() > 1 {
        #[cfg(all(target_arch = "wasm32", feature = "threads"))]
        if WIDTH.load(Ordering::SeqCst) > 1 {
            // The pool leaves this thread a share: lead the loop (or join the team leading).
            team::run(|| chunks_in_team_or_pool(data, chunk_len, f));
            return;
        }
        chunks_in_team_or_pool(data, chunk_len, f);
        return;
    }
    data.chunks_mut(chunk_len)
        .enumerate()
        .for_each(|(i, c)| f(i, c));
}

/// Rows a task of a row-wise loop over `rows` rows takes: four tasks a thread, so a thread
/// that falls behind leaves little for the others to wait on; at least one.
fn rows_per_task(rows: usize) -> usize {
    rows.div_ceil(4 * num_threads()).max(1)
}

/// Calls `f(i, row)` for each `width`-long row `i` of `data`, a few rows a task over the threads
/// ([`rows_per_task`]): a prompt's row-wise steps (norms, RoPE, quantizing activations). Run on
/// the leader alone, norms and RoPE were 4 % of a two-thread prompt, the other thread waiting
/// (section profile). A lone row runs inline.
pub fn for_each_row<T: Send>(
    data: &mut [T],
    width: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if width == 0 {
        return;
    }
    let per = rows_per_task(data.len() / width);
    for_each_chunk_mut(data, per * width, |c, chunk| {
        for (i, row) in chunk.chunks_exact_mut(width).enumerate() {
            f(c * per + i, row);
        }
    });
}

/// Runs `f` with every parallel loop it starts kept on this thread, leaving the other cores
/// free (for the browser's optimising compiler: see `Model::warm_up`).
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // used by the model only
pub fn alone<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    let _restore = solo::Restore(solo::ALONE.with(|a| a.replace(true)));
    f()
}

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
fn is_alone() -> bool {
    solo::ALONE.with(std::cell::Cell::get)
}

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
mod solo {
    thread_local! {
        /// Inside [`super::alone`] on this thread.
        pub(super) static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Puts the flag back as it was when `alone` ends, even by unwinding.
    pub(super) struct Restore(pub(super) bool);

    impl Drop for Restore {
        fn drop(&mut self) {
            ALONE.with(|a| a.set(self.0));
        }
    }
}

/// The chunks of [`for_each_chunk_mut`] as the leader's team job, or else on rayon's pool.
#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
fn chunks_in_team_or_pool<T: Send>(
    data: &mut [T],
    chunk_len: usize,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    if team::active() {
        team::for_each_chunk_mut(data, chunk_len, f);
        return;
    }
    use rayon::prelude::*;
    data.par_chunks_mut(chunk_len)
        .enumerate()
        .for_each(|(i, c)| f(i, c));
}

/// Runs `f` on this thread with the team's helpers standing by for its parallel loops (see the
/// module docs).
/// Falls back to running `f` plainly when there is one thread or another team is running.
#[cfg_attr(not(feature = "llm"), allow(dead_code))] // used by the model only
pub fn with_team<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    {
        team::run(f)
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        f()
    }
}

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
mod team {
    //! The calling thread leads; `threads − 1` helpers, started as rayon tasks, spin on a
    //! generation counter for the leader's jobs and stay for [`LINGER_MS`] after the last one, so
    //! a decode loop (one forward pass per token) finds them awake and never pays a wake-up.
    //! Natively and after `initThreadPool`, one pool thread stays free for ordinary rayon work
    //! and the leader plus helpers never outnumber the pool; after `startThreads` the pool is
    //! exactly the helpers, and the leader leads the plain loops too.
    use super::TeamStats;
    use crate::clock::now_ms;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    /// How long idle helpers keep spinning before they hand their pool thread back.
    const LINGER_MS: f64 = 30.0;

    /// A parallel loop: chunk indices are taken from `next` until `count`; each thread adds the
    /// chunks it ran to `done` once, when it finds none left.
    struct Job {
        /// Runs one chunk; a `'static` stand-in for a borrow that outlives every use (the leader
        /// withdraws the job and waits out every helper holding it before returning).
        run: *const (dyn Fn(usize) + Sync),
        count: usize,
        next: Line<AtomicUsize>,
        done: Line<AtomicUsize>,
    }

    /// A cache line to itself: the counters every thread writes share no line with each other
    /// or with what lies beside the job on the leader's stack.
    #[repr(align(64))]
    struct Line<T>(T);

    /// Bumped for every published job; helpers spin on it.
    static GENERATION: AtomicUsize = AtomicUsize::new(0);
    /// The current job (`*const Job` as usize; 0 when none).
    static JOB: AtomicUsize = AtomicUsize::new(0);
    /// Helpers between announcing themselves and letting go of `JOB` (hazard count).
    static HOLDING: AtomicUsize = AtomicUsize::new(0);
    /// Helpers alive (spinning or working).
    static HELPERS: AtomicUsize = AtomicUsize::new(0);
    /// Only one leader at a time: its jobs are what the helpers run.
    static LEADING: AtomicBool = AtomicBool::new(false);

    thread_local! {
        static IS_LEADER: Cell<bool> = const { Cell::new(false) };
        /// This thread's [`TeamStats`] while measured (`super::measure_team`).
        pub(super) static TALLY: Cell<Option<TeamStats>> = const { Cell::new(None) };
    }

    pub(super) fn active() -> bool {
        IS_LEADER.with(Cell::get)
    }

    /// Helpers alive now.
    #[cfg(test)]
    pub(super) fn helpers() -> usize {
        HELPERS.load(SeqCst)
    }

    /// Helpers a leader wants: one fewer than the threads that compute, and no more than the
    /// pool has threads.
    fn wanted() -> usize {
        super::num_threads()
            .saturating_sub(1)
            .min(rayon::current_num_threads())
    }

    pub(super) fn run<R>(f: impl FnOnce() -> R) -> R {
        if wanted() == 0
            || super::is_alone()
            || active()
            || rayon::current_thread_index().is_some()
            || LEADING
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_err()
        {
            return f();
        }
        /// Ends the leadership even if `f` unwinds.
        struct Lead;
        impl Drop for Lead {
            fn drop(&mut self) {
                IS_LEADER.with(|l| l.set(false));
                LEADING.store(false, SeqCst);
            }
        }
        let _lead = Lead;
        IS_LEADER.with(|l| l.set(true));
        top_up();
        f()
    }

    /// Starts helpers up to [`wanted`]; ones still lingering from the last pass are reused. Also
    /// called by a loop that finds none: a helper whose linger ran out just as the leader began
    /// (counted when [`run`] looked, gone by its first loop) would otherwise leave the whole pass
    /// to the leader.
    fn top_up() {
        let wanted = wanted();
        while HELPERS.load(SeqCst) < wanted {
            HELPERS.fetch_add(1, SeqCst);
            rayon::spawn(help);
        }
    }

    fn help() {
        let mut seen = GENERATION.load(SeqCst);
        let mut last_work = now_ms();
        let mut spins = 0u32;
        loop {
            let g = GENERATION.load(SeqCst);
            if g == seen {
                spins = spins.wrapping_add(1);
                if spins % 4096 == 0 && now_ms() - last_work > LINGER_MS {
                    HELPERS.fetch_sub(1, SeqCst);
                    return;
                }
                core::hint::spin_loop();
                continue;
            }
            seen = g;
            HOLDING.fetch_add(1, SeqCst);
            let job = JOB.load(SeqCst) as *const Job;
            if !job.is_null() {
                // SAFETY: `HOLDING` was raised before `JOB` was read, and the leader clears `JOB`
                // and then waits for `HOLDING` to reach zero before the job goes out of scope.
                work(unsafe { &*job });
            }
            HOLDING.fetch_sub(1, SeqCst);
            last_work = now_ms();
        }
    }

    /// Runs chunks of `job` until none is left, then counts them done; how many it ran.
    fn work(job: &Job) -> usize {
        // SAFETY: see `Job::run`.
        let run = unsafe { &*job.run };
        let mut ran = 0;
        loop {
            let i = job.next.0.fetch_add(1, SeqCst);
            if i >= job.count {
                break;
            }
            run(i);
            ran += 1;
        }
        if ran > 0 {
            job.done.0.fetch_add(ran, SeqCst);
        }
        ran
    }

    /// Spins for about a chunk's time (65,536 spins, ~65 µs in Chromium), then gives the core
    /// away for a moment: a helper that the OS preempted in the middle of its chunk (two cores
    /// shared with the browser's own threads) can then finish on the core this thread would
    /// otherwise burn. A wasm sleep of 20 µs lasts ~50 µs or more, so giving up sooner (after
    /// 4,096 spins, ~4 µs) made the leader wait ~56 µs at the end of each small decode loop
    /// (section profile, `team.waitMs`).
    fn back_off(spins: &mut u32) {
        *spins += 1;
        if *spins < 1 << 16 {
            core::hint::spin_loop();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }

    /// Wrapper that lets chunk pointers cross threads; every chunk is touched by one thread.
    struct SendPtr<T>(*mut T);
    unsafe impl<T: Send> Sync for SendPtr<T> {}
    unsafe impl<T: Send> Send for SendPtr<T> {}
    impl<T> SendPtr<T> {
        /// A method, so closures capture the whole (Sync) wrapper rather than its raw field.
        fn get(&self) -> *mut T {
            self.0
        }
    }

    pub(super) fn for_each_chunk_mut<T: Send>(
        data: &mut [T],
        chunk_len: usize,
        f: &(dyn Fn(usize, &mut [T]) + Sync),
    ) {
        let count = data.len().div_ceil(chunk_len);
        let len = data.len();
        let base = SendPtr(data.as_mut_ptr());
        let run = |i: usize| {
            let start = i * chunk_len;
            let n = chunk_len.min(len - start);
            // SAFETY: chunk `i` is `start..start + n` of `data`, handed out exactly once (the
            // atomic `next` counter), so no two threads alias; `data` outlives the job.
            let chunk = unsafe { core::slice::from_raw_parts_mut(base.get().add(start), n) };
            f(i, chunk);
        };
        if count <= 1 {
            (0..count).for_each(run);
            return;
        }
        if HELPERS.load(SeqCst) == 0 {
            // The helper may arrive too late for this loop; it is there for the next.
            top_up();
        }
        let run_ref: &(dyn Fn(usize) + Sync) = &run;
        // SAFETY: only the lifetime is erased; the job is withdrawn and every holder waited out
        // before `run` goes out of scope.
        let run_static: *const (dyn Fn(usize) + Sync) = unsafe { core::mem::transmute(run_ref) };
        let job = Job {
            run: run_static,
            count,
            next: Line(AtomicUsize::new(0)),
            done: Line(AtomicUsize::new(0)),
        };
        JOB.store(&job as *const Job as usize, SeqCst);
        GENERATION.fetch_add(1, SeqCst);
        let mine = work(&job);
        let idle_from = TALLY.with(Cell::get).map(|_| now_ms());
        let mut spins = 0u32;
        while job.done.0.load(SeqCst) != count {
            back_off(&mut spins);
        }
        if let Some(t0) = idle_from {
            let waited = now_ms() - t0;
            TALLY.with(|t| {
                t.set(t.get().map(|s| TeamStats {
                    jobs: s.jobs + 1,
                    chunks: s.chunks + count as u64,
                    helper_chunks: s.helper_chunks + (count - mine) as u64,
                    wait_ms: s.wait_ms + waited,
                }))
            });
        }
        JOB.store(0, SeqCst);
        while HOLDING.load(SeqCst) != 0 {
            core::hint::spin_loop();
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::thread::{self, ThreadId};

    /// Held by the tests that lead a team, so that they do not wait out each other's passes.
    static LEADS: Mutex<()> = Mutex::new(());

    /// Threads that ran the chunks of one loop over 64 elements in 64 chunks.
    fn threads_of_a_loop() -> Vec<ThreadId> {
        let seen = Mutex::new(Vec::new());
        let mut data = vec![0u32; 64];
        for_each_chunk_mut(&mut data, 1, |i, c| {
            c[0] = i as u32;
            std::thread::sleep(std::time::Duration::from_micros(200));
            seen.lock().unwrap().push(thread::current().id());
        });
        assert!(data.iter().enumerate().all(|(i, &v)| v == i as u32));
        seen.into_inner().unwrap()
    }

    /// While measured, a loop the team runs counts as one job with every chunk (16, by hand), and
    /// as helpers' chunks exactly those that ran on another thread (each chunk records its
    /// thread); off, nothing is tallied.
    #[test]
    fn team_stats_count_each_led_loop_while_measured() {
        let _lead = LEADS.lock().unwrap_or_else(|e| e.into_inner());
        let me = thread::current().id();
        let mut led = None;
        // Another test may be leading at the moment (then the loop runs on rayon's pool):
        // try until this thread leads one.
        for _ in 0..100 {
            measure_team(true);
            let mut data = vec![0u32; 64];
            let elsewhere = Mutex::new(0u64);
            with_team(|| {
                for_each_chunk_mut(&mut data, 4, |i, c| {
                    c.fill(i as u32);
                    std::thread::sleep(std::time::Duration::from_micros(100));
                    *elsewhere.lock().unwrap() += u64::from(thread::current().id() != me);
                })
            });
            assert!(data.iter().enumerate().all(|(k, &v)| v == k as u32 / 4));
            let s = take_team_stats().unwrap();
            if s.jobs > 0 {
                led = Some((s, elsewhere.into_inner().unwrap()));
                break;
            }
        }
        measure_team(false);
        assert_eq!(take_team_stats(), None);
        if num_threads() > 1 {
            let (s, elsewhere) = led.expect("the team led one loop");
            assert_eq!(
                (s.jobs, s.chunks, s.helper_chunks),
                (1, 16, elsewhere),
                "{s:?}"
            );
            assert!(s.wait_ms >= 0.0, "{s:?}");
        }
    }

    /// A helper whose linger runs out in the middle of a led pass (here: a pause longer than
    /// `LINGER_MS` between two loops) is replaced by the next loop, so a later loop of the same
    /// pass has a chunk run on another thread. Before, every later loop ran on the leader alone.
    #[test]
    fn a_helper_that_lingered_out_is_replaced_within_the_pass() {
        if num_threads() < 2 {
            return;
        }
        let _lead = LEADS.lock().unwrap_or_else(|e| e.into_inner());
        let me = thread::current().id();
        let mut led = false;
        // Another test may be leading at the moment: try until this thread leads.
        for _ in 0..100 {
            let joined = with_team(|| {
                if !team::active() {
                    return None;
                }
                let t0 = std::time::Instant::now();
                thread::sleep(std::time::Duration::from_millis(60));
                while team::helpers() > 0 && t0.elapsed().as_secs() < 5 {
                    thread::sleep(std::time::Duration::from_millis(1));
                }
                assert_eq!(team::helpers(), 0, "the helper lingered out");
                Some((0..200).any(|_| threads_of_a_loop().iter().any(|&t| t != me)))
            });
            if let Some(joined) = joined {
                assert!(joined, "no later loop of the pass had a helper");
                led = true;
                break;
            }
            thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(led, "this thread led a pass");
    }

    #[test]
    fn alone_keeps_every_chunk_on_the_calling_thread_and_ends() {
        let me = thread::current().id();
        assert!(alone(threads_of_a_loop).iter().all(|&t| t == me));
        assert!(!is_alone());
        if num_threads() > 1 {
            // Outside `alone` the loop goes to rayon's pool, none of whose threads is this one.
            assert!(threads_of_a_loop().iter().any(|&t| t != me));
        }
    }
}
