//! Helpers shared by the integration tests: a seeded RNG, an index-by-index gather (the oracle
//! for every view and copy), and float comparisons.
#![allow(dead_code)]

use kopitiam_wasm::Tensor;

/// xorshift64*: deterministic, dependency-free test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.f32() * scale).collect()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Row-major multi-indices of `dims`.
pub fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = dims.iter().product();
    (0..n)
        .map(|mut flat| {
            let mut idx = vec![0; dims.len()];
            for ax in (0..dims.len()).rev() {
                idx[ax] = flat % dims[ax];
                flat /= dims[ax];
            }
            idx
        })
        .collect()
}

/// The oracle for views: element `idx` of a view is `storage[offset + Σ idx·stride]`.
pub fn gather_by_index(storage: &[f32], t: &Tensor) -> Vec<f32> {
    indices(t.dims())
        .into_iter()
        .map(|idx| {
            let off: usize = t.offset()
                + idx
                    .iter()
                    .zip(t.strides())
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            storage[off]
        })
        .collect()
}

pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol * (1.0 + w.abs()) || (g.is_nan() && w.is_nan()) || g == w;
        assert!(ok, "element {i}: got {g}, want {w} (tol {tol})");
    }
}

/// Asserts that `r` failed with error code `code`.
#[track_caller]
pub fn assert_err<T: std::fmt::Debug>(r: kopitiam_wasm::Result<T>, code: &str) {
    match r {
        Ok(v) => panic!("expected {code}, got Ok({v:?})"),
        Err(e) => assert_eq!(e.code(), code, "wrong error: {e}"),
    }
}

/// A JSON array of token ids (llama.cpp reference files).
pub fn json_ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect()
}

/// Index of the first maximum.
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// The files `names` of `../shared/<dir>` (Llama 3 data under the Meta Llama 3 licence lives
/// there, not in this repo), or `None` after saying SKIPPED when they are absent.
#[cfg(not(target_arch = "wasm32"))]
pub fn shared_files<const N: usize>(dir: &str, names: [&str; N]) -> Option<[Vec<u8>; N]> {
    let root = format!("{}/../shared/{dir}", env!("CARGO_MANIFEST_DIR"));
    let files: Option<Vec<Vec<u8>>> = names
        .iter()
        .map(|n| std::fs::read(format!("{root}/{n}")).ok())
        .collect();
    if files.is_none() {
        println!("SKIPPED: {root} is absent (Llama 3 data is not redistributed in this repo)");
    }
    files.and_then(|f| f.try_into().ok())
}

/// `f`'s metadata and tensors (read from `bytes`) written again with a fresh writer, each
/// metadata value passed through `edit` (the identity for a plain round trip).
pub fn rewrite_gguf(
    f: &kopitiam_wasm::gguf::GgufFile,
    bytes: &[u8],
    edit: impl Fn(&str, &kopitiam_wasm::gguf::Value) -> kopitiam_wasm::gguf::Value,
) -> Vec<u8> {
    let mut w = kopitiam_wasm::gguf::GgufWriter::new(f.alignment);
    for (k, v) in &f.metadata {
        w.add_metadata(k.clone(), edit(k, v));
    }
    for t in &f.tensors {
        let data = f.tensor_bytes(bytes, t).unwrap().to_vec();
        w.add_tensor(t.name.clone(), t.dtype, &t.shape(), data)
            .unwrap();
    }
    w.to_bytes().unwrap()
}
