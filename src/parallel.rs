//! The one place that knows about threads.
//!
//! Natively the pool is rayon's global pool. In the browser the single-thread build runs
//! everything inline; the threaded build (`threads` feature) runs rayon on wasm-bindgen-rayon's
//! Web Worker pool, which JavaScript starts with `await initThreadPool(n)` before the first op.
//! Work is split so that each output element is written by exactly one thread in a fixed order,
//! so results are bit-identical whatever the number of threads.

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
