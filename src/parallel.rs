//! The one place that knows about threads.
//!
//! Natively the pool is rayon's global pool. In the browser the single-thread build runs
//! everything inline; the threaded build (a later `threads` feature) swaps in
//! wasm-bindgen-rayon's Web Worker pool here and nowhere else.

/// How many threads work may be split over.
pub fn num_threads() -> usize {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads()
    }
    #[cfg(target_arch = "wasm32")]
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
    #[cfg(not(target_arch = "wasm32"))]
    {
        use rayon::prelude::*;
        data.par_chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    }
    #[cfg(target_arch = "wasm32")]
    {
        data.chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    }
}
