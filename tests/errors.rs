//! Every public op called with bad dtypes, shapes, sizes, axes and ids — and the model's parts
//! given bad metadata or each other's mismatched pieces — returns the matching error variant
//! instead of panicking. Sizes are chosen so that the op's own check rejects them before any
//! allocation on both targets (64-bit `usize` natively, 32-bit on wasm32).

mod common;

use common::assert_err;
use kopitiam_wasm::{DType, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

type Op = (
    &'static str,
    fn(&Tensor, &Tensor) -> kopitiam_wasm::Result<Tensor>,
);

fn ops() -> Vec<Op> {
    vec![
        ("add", |a, b| a.add(b)),
        ("sub", |a, b| a.sub(b)),
        ("mul", |a, b| a.mul(b)),
        ("div", |a, b| a.div(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("eq", |a, b| a.eq(b)),
        ("lt", |a, b| a.lt(b)),
        ("matmul", |a, b| a.matmul(b)),
        ("rms_norm", |a, b| a.rms_norm(b, 1e-6)),
        ("layer_norm", |a, b| a.layer_norm(b, b, 1e-6)),
        ("conv1d", |a, b| a.conv1d(b, None, 1)),
        ("exp", |a, _| a.exp()),
        ("silu", |a, _| a.silu()),
        ("gelu", |a, _| a.gelu()),
        ("tanh", |a, _| a.tanh()),
        ("sigmoid", |a, _| a.sigmoid()),
        ("softmax", |a, _| a.softmax(0)),
        ("sum", |a, _| a.sum(0, false)),
        ("max", |a, _| a.max(0, false)),
        ("argmax", |a, _| a.argmax(0, true)),
        ("maxpool1d", |a, _| a.maxpool1d(1, 1)),
        ("transpose", |a, _| a.transpose(0, 1)),
        ("narrow", |a, _| a.narrow(0, 0, 1)),
        ("reshape", |a, _| a.reshape([32])),
        ("to_vec", |a, _| a.to_vec_f32().map(|_| a.clone())),
    ]
}

#[test]
fn non_f32_inputs_are_dtype_errors() {
    let i = Tensor::from_i32(vec![1; 32], [1, 32]).unwrap();
    let h = Tensor::from_f16(vec![0; 32], [1, 32]).unwrap();
    let f = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    for (name, op) in ops() {
        for bad in [&i, &h] {
            let r = op(bad, &f);
            // Pure data movement (views) accepts every plain dtype.
            if ["transpose", "narrow", "reshape"].contains(&name) {
                assert!(r.is_ok(), "{name}");
            } else {
                assert_err(r, "DTypeMismatch");
            }
        }
    }
}

#[test]
fn quantized_inputs_are_element_access_errors() {
    let q = Tensor::from_quantized(DType::Q8_0, vec![0; 34], [1, 32]).unwrap();
    let f = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    for (name, op) in ops() {
        let r = op(&q, &f);
        assert!(
            matches!(r, Err(ref e) if e.code() == "QuantizedElementAccess"),
            "{name}: {r:?}"
        );
    }
    // And as the second operand of binary ops.
    assert_err(f.add(&q), "QuantizedElementAccess");
    assert_err(f.matmul(&q), "QuantizedElementAccess");
    assert_err(
        Tensor::concat(&[q.clone(), q.clone()], 0),
        "QuantizedElementAccess",
    );
}

#[test]
fn bad_shapes_and_axes() {
    let a = Tensor::from_f32(vec![1.0; 6], [2, 3]).unwrap();
    let b = Tensor::from_f32(vec![1.0; 4], [2, 2]).unwrap();
    let v = Tensor::from_f32(vec![1.0; 3], [3]).unwrap();
    assert_err(a.add(&b), "NotBroadcastable");
    assert_err(a.matmul(&a), "ShapeMismatch");
    assert_err(a.matmul(&v), "ShapeMismatch");
    let batch_a = Tensor::from_f32(vec![1.0; 12], [2, 2, 3]).unwrap();
    let batch_b = Tensor::from_f32(vec![1.0; 27], [3, 3, 3]).unwrap();
    assert_err(batch_a.matmul(&batch_b), "NotBroadcastable");
    for axis in [2, 99] {
        assert_err(a.sum(axis, false), "AxisOutOfRange");
        assert_err(a.max(axis, true), "AxisOutOfRange");
        assert_err(a.argmax(axis, false), "AxisOutOfRange");
        assert_err(a.softmax(axis), "AxisOutOfRange");
    }
    assert_err(a.layer_norm(&v, &b, 1e-5), "ShapeMismatch");
    assert_err(v.conv1d(&a, None, 1), "ShapeMismatch");
    assert_err(v.maxpool1d(1, 1), "ShapeMismatch");
    assert_err(a.maxpool1d(0, 1), "ShapeMismatch");
    assert_err(
        a.gather_rows(&Tensor::from_i32(vec![2], [1]).unwrap()),
        "IndexOutOfRange",
    );
    assert_err(
        v.gather_rows(&Tensor::from_i32(vec![0], [1]).unwrap()),
        "ShapeMismatch",
    );
    assert_err(
        a.gather_rows(&Tensor::from_i32(vec![i32::MIN], [1]).unwrap()),
        "IndexOutOfRange",
    );
    // Empty tables and empty rows check their ids too (no row is copied, so no loop saw them).
    let ids = Tensor::from_i32(vec![0, 5], [2]).unwrap();
    let no_rows = Tensor::from_f32(vec![], [0, 3]).unwrap();
    assert_err(no_rows.gather_rows(&ids), "IndexOutOfRange");
    let empty_rows = Tensor::from_f32(vec![], [3, 0]).unwrap();
    assert_err(empty_rows.gather_rows(&ids), "IndexOutOfRange");
    let ok = Tensor::from_i32(vec![2, 0], [2]).unwrap();
    assert_eq!(empty_rows.gather_rows(&ok).unwrap().dims(), &[2, 0]);
}

#[test]
fn errors_have_helpful_messages() {
    let a = Tensor::from_f32(vec![1.0; 6], [2, 3]).unwrap();
    let e = a.matmul(&a).unwrap_err();
    assert!(e.to_string().contains("[2, 3] @ [2, 3]"), "{e}");
    let e = a.narrow(1, 2, 5).unwrap_err();
    assert!(e.to_string().contains("size 3"), "{e}");
}

/// A size whose square overflows `usize` on this target (`u64` natively), so a product of two
/// of them fails in the op's own check before any allocation, on both targets.
const HUGE: usize = 1 << (usize::BITS / 2 + 1);

/// An f32 tensor of `dims` with no elements (one of them is 0), however large the others.
fn empty(dims: &[usize]) -> Tensor {
    Tensor::from_f32(vec![], dims).unwrap()
}

#[test]
fn shapes_whose_nonzero_dims_overflow_are_rejected() {
    // An empty tensor whose other dims overflow would let ops multiply them unchecked.
    assert_err(Tensor::try_zeros([0, HUGE, HUGE]), "SizeOverflow");
    assert_err(Tensor::from_f32(vec![], [HUGE, 0, HUGE]), "SizeOverflow");
    assert_eq!(empty(&[0, HUGE]).elem_count(), 0);
}

#[test]
fn narrowing_an_empty_tensor_stays_inside_its_storage() {
    // [0, 5] has no elements; its view of columns 2..5 started at element 2 of an empty buffer
    // (no read reached it yet, but any contiguous fast path would slice out of range).
    let v = empty(&[0, 5]).narrow(1, 2, 3).unwrap();
    assert_eq!(v.dims(), [0, 3]);
    assert!(v.offset() <= v.storage().elem_count(), "{v:?}");
    assert_eq!(v.to_vec_f32().unwrap(), Vec::<f32>::new());
    assert_eq!(v.exp().unwrap().dims(), [0, 3]);
    assert_eq!(v.sum(0, false).unwrap().to_vec_f32().unwrap(), [0.0; 3]);
    // A non-empty narrow still moves the offset.
    let t = Tensor::from_f32(vec![1.0, 2.0, 3.0, 4.0], [2, 2]).unwrap();
    assert_eq!(t.narrow(1, 1, 1).unwrap().to_vec_f32().unwrap(), [2.0, 4.0]);
}

#[test]
fn conv1d_output_size_is_checked() {
    // in_ch = 0: both inputs are empty, but [out_ch, out_len] = [HUGE, HUGE] does not fit.
    let (x, w) = (empty(&[0, HUGE]), empty(&[HUGE, 0, 1]));
    assert_err(x.conv1d(&w, None, 1), "SizeOverflow");
    // Still a working op: [1, 4] * [2, 1, 2] kernels, bias [2].
    let x = Tensor::from_f32(vec![1.0, 2.0, 3.0, 4.0], [1, 4]).unwrap();
    let w = Tensor::from_f32(vec![1.0, 1.0, 1.0, -1.0], [2, 1, 2]).unwrap();
    let b = Tensor::from_f32(vec![0.5, 0.0], [2]).unwrap();
    let y = x.conv1d(&w, Some(&b), 1).unwrap();
    assert_eq!(y.dims(), [2, 3]);
    assert_eq!(y.to_vec_f32().unwrap(), [3.5, 5.5, 7.5, -1.0, -1.0, -1.0]);
    assert_eq!(
        x.conv1d(&w, None, 2).unwrap().to_vec_f32().unwrap(),
        [3.0, 7.0, -1.0, -1.0]
    );
}

/// The case: 65 536 × 65 536 outputs wrapped to 0 in `usize` and the op trapped
/// writing them. Natively that is a real 16 GiB result, so it only runs on wasm32.
#[cfg(target_arch = "wasm32")]
#[test]
fn conv1d_wrapping_output_on_wasm32() {
    let x = Tensor::zeros([1, 65536]);
    let w = Tensor::zeros([65536, 1, 1]);
    assert_err(x.conv1d(&w, None, 1), "SizeOverflow");
}

#[test]
fn quantized_matmul_output_size_is_checked() {
    // in = 0: the inputs are empty, the [HUGE, HUGE] output is not.
    let w = Tensor::from_quantized(DType::Q8_0, vec![], [HUGE, 0]).unwrap();
    assert_err(empty(&[HUGE, 0]).quantized_matmul(&w), "SizeOverflow");
    // A small in = 0 product is all zeros (it used to be a [3, 2] tensor over an empty buffer).
    let w = Tensor::from_quantized(DType::Q4_0, vec![], [2, 0]).unwrap();
    let y = empty(&[3, 0]).quantized_matmul(&w).unwrap();
    assert_eq!(y.to_vec_f32().unwrap(), [0.0; 6]);
    // Still a working op: x · wᵀ with one Q8_0 block of 1s (scale f16 1.0 = 0x3C00).
    let mut block = vec![0x00, 0x3C];
    block.extend([1u8; 32]);
    let w = Tensor::from_quantized(DType::Q8_0, block, [1, 32]).unwrap();
    let x = Tensor::from_f32(vec![1.0; 32], [1, 32]).unwrap();
    let y = x.quantized_matmul(&w).unwrap().to_vec_f32().unwrap();
    common::assert_close(&y, &[32.0], 1e-2);
}

/// The cases: `[65536, 32] @ [65536, 32]ᵀ` has 2^32 outputs, 0 in a wrapped `usize`; Q4_0
/// trapped and Q8_0 returned a [65536, 65536] tensor over an empty buffer. Natively that is a
/// real 16 GiB result, so it only runs on wasm32.
#[cfg(target_arch = "wasm32")]
#[test]
fn quantized_matmul_wrapping_output_on_wasm32() {
    let x = Tensor::zeros([65536, 32]);
    for dtype in [DType::Q4_0, DType::Q8_0] {
        let bytes = vec![0; 65536 * dtype.block_bytes()];
        let w = Tensor::from_quantized(dtype, bytes, [65536, 32]).unwrap();
        assert_err(x.quantized_matmul(&w), "SizeOverflow");
    }
}

#[test]
fn softmax_axis_at_the_top_of_usize() {
    // A JavaScript axis of 2^32 - 1 is usize::MAX on wasm32; `axis + 1` overflowed.
    let a = Tensor::from_f32(vec![1.0, 2.0], [2]).unwrap();
    assert_err(a.softmax(usize::MAX), "AxisOutOfRange");
    common::assert_close(
        &a.softmax(0).unwrap().to_vec_f32().unwrap(),
        &[0.268_941_4, 0.731_058_6],
        1e-6,
    );
}

mod model_inputs {
    use super::common::assert_err;
    use super::HUGE;
    use kopitiam_wasm::gguf::{GgufFile, Value};
    use kopitiam_wasm::model::config::Config;
    use kopitiam_wasm::model::kv_cache::KvCache;
    use kopitiam_wasm::model::transformer::{forward, Scratch};
    use kopitiam_wasm::model::weights::{Linear, Weights};
    use kopitiam_wasm::model::{Logits, Model};
    use kopitiam_wasm::quant::MatmulScratch;
    use kopitiam_wasm::{DType, Tensor};
    use std::sync::Arc;

    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const TINY: &[u8] = include_bytes!("fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf");

    /// The fixture's metadata with `key` set to the u32 `value`.
    fn with_u32(key: &str, value: u32) -> GgufFile {
        let mut g = GgufFile::parse(TINY).unwrap();
        let key = format!("gemma3.{key}");
        g.metadata.retain(|(k, _)| *k != key);
        g.metadata.push((key, Value::U32(value)));
        g
    }

    #[test]
    fn head_products_from_metadata_are_checked() {
        // n_head · head_dim overflows a 32-bit usize (it wrapped to a size a weight could have).
        let g = with_u32("attention.key_length", u32::MAX - 1);
        let r = Config::from_gguf(&g);
        #[cfg(target_arch = "wasm32")]
        assert_err(r, "SizeOverflow");
        // Natively the product fits, and no tensor in the file has that shape.
        #[cfg(not(target_arch = "wasm32"))]
        {
            let file = Arc::new(TINY.to_vec());
            let w = Weights::load(&r.unwrap(), &g, &file, &[]).map(|_| ());
            assert_err(w, "MissingMetadata");
        }
    }

    #[test]
    fn a_huge_block_count_is_a_missing_tensor() {
        // Nothing is sized by block_count before the layers' tensors are looked up.
        let g = with_u32("block_count", u32::MAX);
        let cfg = Config::from_gguf(&g).unwrap();
        let file = Arc::new(TINY.to_vec());
        assert_err(
            Weights::load(&cfg, &g, &file, &[]).map(|_| ()),
            "MissingMetadata",
        );
    }

    #[test]
    fn tensor_bytes_that_disagree_with_the_dtype() {
        // `TensorInfo` is public: an F32 norm relabelled F16 has twice the bytes its shape needs.
        let mut g = GgufFile::parse(TINY).unwrap();
        let cfg = Config::from_gguf(&g).unwrap();
        let t = g
            .tensors
            .iter_mut()
            .find(|t| t.name == "output_norm.weight");
        let t = t.unwrap();
        assert_eq!(t.dtype, DType::F32);
        t.dtype = DType::F16;
        let file = Arc::new(TINY.to_vec());
        assert_err(
            Weights::load(&cfg, &g, &file, &[]).map(|_| ()),
            "InvalidGguf",
        );
    }

    #[test]
    fn forward_rejects_parts_that_do_not_match() {
        let model = Model::load(TINY.to_vec()).unwrap();
        let (cfg, w) = (model.config(), model.weights());
        let mut s = Scratch::default();
        // A cache of the wrong width: attention sliced past its rows.
        let mut cache = KvCache::new(cfg.n_layer, 8, cfg.kv_dim() / 2).unwrap();
        let r = forward(cfg, w, &mut cache, &mut s, &[1], 0, Logits::Last).map(|_| ());
        assert_err(r, "ShapeMismatch");
        let mut cache = KvCache::new(cfg.n_layer - 1, 8, cfg.kv_dim()).unwrap();
        let r = forward(cfg, w, &mut cache, &mut s, &[1], 0, Logits::Last).map(|_| ());
        assert_err(r, "ShapeMismatch");
        // A hand-edited config: `il % swa_period` divided by zero.
        let mut bad = cfg.clone();
        bad.swa_period = 0;
        let mut cache = KvCache::new(cfg.n_layer, 8, cfg.kv_dim()).unwrap();
        let r = forward(&bad, w, &mut cache, &mut s, &[1], 0, Logits::Last).map(|_| ());
        assert_err(r, "UnsupportedModel");
        // A window of 0 positions attended to nothing and left stale rows behind.
        let mut bad = cfg.clone();
        bad.sliding_window = Some(0);
        assert_err(bad.validate(), "UnsupportedModel");
        // The same parts, matching, still run.
        let logits = forward(cfg, w, &mut cache, &mut s, &[1, 2], 0, Logits::Last).unwrap();
        assert_eq!(logits.len(), cfg.n_vocab);
        assert!(logits.iter().all(|l| l.is_finite()));
    }

    #[test]
    fn kv_cache_layer_table_is_fallible() {
        // The per-layer table was `Vec::with_capacity(n_layer)`: a capacity-overflow panic.
        assert_err(
            KvCache::new(usize::MAX / 8, 1, 1).map(|_| ()),
            "AllocationFailed",
        );
        assert_err(KvCache::new(1, HUGE, HUGE).map(|_| ()), "SizeOverflow");
        assert_eq!(KvCache::new(2, 4, 8).unwrap().n_layer(), 2);
    }

    #[test]
    fn linear_with_inconsistent_fields() {
        let mut mm = MatmulScratch::default();
        // `w` too short for 2 × 2: row 1 sliced past it.
        let dense = Linear::Dense {
            w: vec![0.0; 3],
            out: 2,
            inp: 2,
        };
        assert_err(dense.row(1, &mut [0.0; 2]), "ShapeMismatch");
        assert_err(
            dense.forward(&[0.0; 2], &mut [0.0; 2], &mut mm),
            "ShapeMismatch",
        );
        // out · in wraps to 0 = w.len() (checked as a wrapped product, it passed).
        let half = 1 << (usize::BITS / 2);
        let wrapped = Linear::Dense {
            w: vec![],
            out: half,
            inp: half,
        };
        assert_err(wrapped.forward(&[], &mut [], &mut mm), "ShapeMismatch");
        // A `Quant` that is not a matrix: its dims were indexed blindly.
        let scalar = Linear::Quant(Tensor::from_f32(vec![1.0], []).unwrap());
        assert_eq!(scalar.out_features(), 0);
        assert_err(scalar.row(0, &mut []), "IndexOutOfRange");
        // A consistent one still works.
        let ok = Linear::Dense {
            w: vec![1.0, 2.0, 3.0, 4.0],
            out: 2,
            inp: 2,
        };
        let mut row = [0.0; 2];
        ok.row(1, &mut row).unwrap();
        assert_eq!(row, [3.0, 4.0]);
        let mut y = [0.0; 2];
        ok.forward(&[1.0, 1.0], &mut y, &mut mm).unwrap();
        assert_eq!(y, [3.0, 7.0]);
    }
}
