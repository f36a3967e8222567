//! Milliseconds from a monotonic clock: the section profile's timers and the thread team's
//! linger and wait times.

#[cfg(target_arch = "wasm32")]
mod imp {
    use wasm_bindgen::prelude::wasm_bindgen;

    #[wasm_bindgen]
    extern "C" {
        /// `performance.now()`: there in pages, workers and Node; 5 µs steps in a
        /// cross-origin-isolated page (the threaded builds need one), 100 µs otherwise, which
        /// averages out over the thousands of calls a profile sums.
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        pub fn now_ms() -> f64;
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use std::sync::OnceLock;
    use std::time::Instant;

    pub fn now_ms() -> f64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
    }
}

pub(crate) use imp::now_ms;
