//! The one place that knows about threads.
//!
//! Natively the pool is rayon's global pool. In the browser the single-thread build runs
//! everything inline; the threaded build (`threads` feature) runs rayon on wasm-bindgen-rayon's
//! Web Worker pool, which JavaScript starts with `await initThreadPool(n)` before the first op.
//! Work is split so that each output element is written by exactly one thread in a fixed order,
//! so results are bit-identical whatever the number of threads.
//!
//! A forward pass issues ~130 small parallel loops per token. Handing each to rayon means waking
//! sleeping workers (a futex / `Atomics.wait` round trip of tens of µs in a browser) each time, so
//! [`with_team`] instead occupies every pool thread for the whole pass: the extra threads spin on
//! an atomic generation counter and pick up each loop within a microsecond, as llama.cpp's
//! threadpool does.

/// How many threads work may be split over.
///
/// In the threaded wasm build, call `initThreadPool(n)` before the first op: rayon's pool is
/// global, and touching it first makes rayon settle for one thread on the current one.
pub fn num_threads() -> usize {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
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

/// Calls `f(chunk_index, chunk)` for consecutive `chunk_len`-sized pieces of `data` (the last
/// may be shorter), in parallel where threads exist. Each element is written by one call, so the
/// result does not depend on the number of threads.
pub fn for_each_chunk_mut<T, F>(data: &mut [T], chunk_len: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync + Send,
{
    let chunk_len = chunk_len.max(1);
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    {
        if team::active() {
            team::for_each_chunk_mut(data, chunk_len, &f);
            return;
        }
        use rayon::prelude::*;
        data.par_chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        data.chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    }
}

/// Runs `f` with every pool thread standing by for its parallel loops (see the module docs).
/// Falls back to running `f` plainly when there is one thread or another team is running.
pub fn with_team<R: Send>(f: impl FnOnce() -> R + Send) -> R {
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
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// A parallel loop as the helpers see it: run chunk indices taken from `next` until `count`.
    struct Job {
        /// Runs one chunk; a `'static` stand-in for a borrow that outlives every use (the
        /// publisher waits for all helpers to finish before returning).
        run: *const (dyn Fn(usize) + Sync),
        next: AtomicUsize,
        count: usize,
    }

    struct Team {
        /// Bumped for every published job; helpers spin on it.
        generation: AtomicUsize,
        job: AtomicUsizePtr,
        /// Helpers still inside the current job.
        busy: AtomicUsize,
        done: AtomicBool,
    }

    /// An `AtomicPtr<Job>` spelled with a usize, so `Team` is `Sync` without extra impls.
    struct AtomicUsizePtr(AtomicUsize);

    /// Only one team at a time: two teams sharing the pool could each hold a thread the other
    /// waits for.
    static TEAM_BUSY: AtomicBool = AtomicBool::new(false);

    thread_local! {
        /// The team whose leader is this thread, while it runs.
        static LEADER_OF: Cell<*const Team> = const { Cell::new(core::ptr::null()) };
    }

    pub(super) fn active() -> bool {
        LEADER_OF.with(|t| !t.get().is_null())
    }

    pub(super) fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        let threads = rayon::current_num_threads();
        if threads < 2
            || active()
            || rayon::current_thread_index().is_some()
            || TEAM_BUSY
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return f();
        }
        struct Release;
        impl Drop for Release {
            fn drop(&mut self) {
                TEAM_BUSY.store(false, Ordering::Release);
            }
        }
        let _release = Release;
        let team = Team {
            generation: AtomicUsize::new(0),
            job: AtomicUsizePtr(AtomicUsize::new(0)),
            busy: AtomicUsize::new(0),
            done: AtomicBool::new(false),
        };
        let f = Mutex::new(Some(f));
        let result = Mutex::new(None);
        rayon::broadcast(|ctx| {
            if ctx.index() == 0 {
                lead(&team, &f, &result);
            } else {
                help(&team);
            }
        });
        let out = result.lock().unwrap_or_else(|e| e.into_inner()).take();
        out.expect("the team leader ran")
    }

    fn lead<R, F: FnOnce() -> R>(team: &Team, f: &Mutex<Option<F>>, result: &Mutex<Option<R>>) {
        /// Lets the helpers go even if `f` unwinds.
        struct Finish<'a>(&'a Team);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                LEADER_OF.with(|t| t.set(core::ptr::null()));
                self.0.done.store(true, Ordering::Release);
            }
        }
        let _finish = Finish(team);
        LEADER_OF.with(|t| t.set(team));
        let f = f.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(f) = f {
            let r = f();
            *result.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        }
    }

    fn help(team: &Team) {
        let mut seen = 0;
        loop {
            let generation = loop {
                let g = team.generation.load(Ordering::Acquire);
                if g != seen {
                    break g;
                }
                if team.done.load(Ordering::Acquire) {
                    return;
                }
                core::hint::spin_loop();
            };
            seen = generation;
            // SAFETY: `busy` was raised before `generation` was bumped, and the leader keeps the
            // job (and what it borrows) alive until `busy` drops back to zero.
            let job = unsafe { &*(team.job.0.load(Ordering::Acquire) as *const Job) };
            work(job);
            team.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn work(job: &Job) {
        // SAFETY: see `Job::run`.
        let run = unsafe { &*job.run };
        loop {
            let i = job.next.fetch_add(1, Ordering::Relaxed);
            if i >= job.count {
                break;
            }
            run(i);
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
            if count == 1 {
                run(0);
            }
            return;
        }
        let team = LEADER_OF.with(|t| t.get());
        // SAFETY: `active()` was true, so this thread leads the live team at `team`.
        let team = unsafe { &*team };
        let run_ref: &(dyn Fn(usize) + Sync) = &run;
        // SAFETY: only the lifetime is erased; the job is withdrawn (busy == 0) before `run`
        // goes out of scope.
        let run_static: *const (dyn Fn(usize) + Sync) = unsafe { core::mem::transmute(run_ref) };
        let job = Job {
            run: run_static,
            next: AtomicUsize::new(0),
            count,
        };
        let helpers = rayon::current_num_threads() - 1;
        team.busy.store(helpers, Ordering::Release);
        team.job
            .0
            .store(&job as *const Job as usize, Ordering::Release);
        team.generation.fetch_add(1, Ordering::AcqRel);
        work(&job);
        let mut spins = 0u32;
        while team.busy.load(Ordering::Acquire) != 0 {
            back_off(&mut spins);
        }
    }

    /// Spins briefly, then gives the core away for a moment: a helper that the OS preempted in
    /// the middle of its chunk (two cores shared with the browser's own threads) can then finish
    /// on the core this thread would otherwise burn.
    fn back_off(spins: &mut u32) {
        *spins += 1;
        if *spins < 4096 {
            core::hint::spin_loop();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
    }
}
