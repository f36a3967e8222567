//! The threaded build (`--features threads`, atomics + shared memory) in a dedicated worker with
//! two threads of compute, as the engine starts them (`startThreads(2)`: this thread leads, a
//! wasm-bindgen-rayon pool of one helps): results are the same bytes a single thread computes.
//! Run by `npm test` through scripts/test-threads.sh; compiled to nothing elsewhere.
#![cfg(all(target_arch = "wasm32", feature = "threads"))]

mod common;

use common::{gather_by_index, Rng};
use kopitiam_wasm::quant::{kernels, quantize_row_q4_0};
use kopitiam_wasm::{num_threads, DType, Tensor};
use std::sync::atomic::{AtomicBool, Ordering};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// The pool is global and must be started before the first op touches rayon (otherwise rayon
/// settles for a one-thread pool on the current thread): the first test starts it.
async fn pool_of_two() {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if !STARTED.swap(true, Ordering::SeqCst) {
        JsFuture::from(kopitiam_wasm::js::start_threads(2).expect("the first start"))
            .await
            .expect("startThreads(2)");
    }
    assert_eq!(num_threads(), 2);
    // The pool starts once: a second start is an error and changes nothing.
    assert!(kopitiam_wasm::js::start_threads(3).is_err());
    assert_eq!(num_threads(), 2);
}

#[wasm_bindgen_test]
async fn quantized_matmul_on_two_threads_equals_one_thread_bytes() {
    pool_of_two().await;
    let mut rng = Rng::new(21);
    // 7 × 368,640 weight bytes: well over the work below which a matmul is not split (1 MiB).
    let (rows, n_in, n_out) = (7, 640, 1024);
    let w: Vec<f32> = rng.vec(n_out * n_in, 1.0);
    let mut wq = vec![0u8; DType::Q4_0.storage_bytes(n_out * n_in).unwrap()];
    quantize_row_q4_0(&w, &mut wq);
    let x = rng.vec(rows * n_in, 2.0);
    let weight = Tensor::from_quantized(DType::Q4_0, wq.clone(), [n_out, n_in]).unwrap();
    let got = Tensor::from_f32(x.clone(), [rows, n_in])
        .unwrap()
        .quantized_matmul(&weight)
        .unwrap()
        .to_vec_f32()
        .unwrap();
    // One thread, in order: quantize each row, then one kernel dot per output element.
    let row_bytes = DType::Q4_0.storage_bytes(n_in).unwrap();
    let act_bytes = DType::Q8_0.storage_bytes(n_in).unwrap();
    let mut want = Vec::new();
    for r in 0..rows {
        let mut xq = vec![0u8; act_bytes];
        kernels::quantize_row_q8_0(&x[r * n_in..(r + 1) * n_in], &mut xq);
        for o in 0..n_out {
            want.push(kernels::vec_dot_q4_0_q8_0(
                &wq[o * row_bytes..(o + 1) * row_bytes],
                &xq,
            ));
        }
    }
    let same = got
        .iter()
        .zip(&want)
        .all(|(a, b)| a.to_bits() == b.to_bits());
    assert!(same && got.len() == want.len());
}

#[wasm_bindgen_test]
async fn large_transposed_copy_on_two_threads_is_right() {
    pool_of_two().await;
    let (r, c) = (700, 300); // 210 000 elements: above the 2^16 threshold, many blocks
    let data: Vec<f32> = (0..r * c).map(|i| i as f32).collect();
    let t = Tensor::from_f32(data.clone(), [r, c]).unwrap();
    let tt = t.transpose(0, 1).unwrap();
    assert_eq!(
        tt.contiguous().unwrap().to_vec_f32().unwrap(),
        gather_by_index(&data, &tt)
    );
    let b = t
        .narrow(1, 7, 200)
        .unwrap()
        .broadcast_to([3, r, 200])
        .unwrap()
        .transpose(0, 2)
        .unwrap();
    assert_eq!(
        b.contiguous().unwrap().to_vec_f32().unwrap(),
        gather_by_index(&data, &b)
    );
}
