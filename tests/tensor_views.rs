//! Constructors, the dtype table, views and every copy path, each checked against an
//! index-by-index gather over the storage.

mod common;

use common::{assert_err, gather_by_index, indices, Rng};
use kopitiam_wasm::{DType, Device, Shape, Tensor};

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

#[test]
fn dtype_table() {
    let rows: Vec<_> = DType::ALL
        .iter()
        .map(|d| {
            (
                d.name(),
                d.block_elems(),
                d.block_bytes(),
                d.is_quantized(),
                d.is_float(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            ("f32", 1, 4, false, true),
            ("f16", 1, 2, false, true),
            ("bf16", 1, 2, false, true),
            ("i8", 1, 1, false, false),
            ("i32", 1, 4, false, false),
            ("q4_0", 32, 18, true, false),
            ("q8_0", 32, 34, true, false),
            ("q4_1", 32, 20, true, false),
            ("q5_0", 32, 22, true, false),
            ("q5_1", 32, 24, true, false),
            ("q4_k", 256, 144, true, false),
            ("q5_k", 256, 176, true, false),
            ("q6_k", 256, 210, true, false),
            ("q8_k", 256, 292, true, false),
        ]
    );
    // GGUF ids from ggml.h's enum ggml_type.
    let ids: Vec<u32> = DType::ALL.iter().map(|d| d.ggml_type()).collect();
    assert_eq!(ids, vec![0, 1, 30, 24, 26, 2, 8, 3, 6, 7, 12, 13, 14, 15]);
    assert_eq!(DType::from_ggml_type(12), Some(DType::Q4_K));
    assert_eq!(DType::from_ggml_type(9), None); // Q8_1: not supported
    assert_eq!(DType::Q4_0.storage_bytes(64).unwrap(), 36);
    assert_err(DType::Q8_0.storage_bytes(33), "PartialQuantizedBlock");
    assert_err(DType::F32.storage_bytes(usize::MAX), "SizeOverflow");
}

#[test]
fn shape_strides_and_broadcasting() {
    assert_eq!(Shape::from([2, 3, 4]).strides(), vec![12, 4, 1]);
    assert_eq!(Shape::scalar().elem_count(), 1);
    assert_eq!(Shape::from([0, 5]).elem_count(), 0);
    let b = |a: &[usize], c: &[usize]| Shape::from(a).broadcast(&Shape::from(c));
    assert_eq!(b(&[3, 1, 5], &[4, 1]).unwrap(), Shape::from([3, 4, 5]));
    assert_eq!(b(&[], &[2, 3]).unwrap(), Shape::from([2, 3]));
    assert_eq!(b(&[0, 1], &[1, 7]).unwrap(), Shape::from([0, 7]));
    assert_err(b(&[2, 3], &[3, 2]), "NotBroadcastable");
    assert_err(
        Shape::from([usize::MAX, 2]).checked_elem_count(),
        "SizeOverflow",
    );
}

#[test]
fn constructors_and_accessors() {
    let t = Tensor::from_f32(iota(6), [2, 3]).unwrap();
    assert_eq!(
        (t.rank(), t.elem_count(), t.strides()),
        (2, 6, &[3usize, 1][..])
    );
    assert_eq!(t.device(), Device::Cpu);
    assert!(t.is_contiguous());
    assert_eq!(t.to_vec_f32().unwrap(), iota(6));
    let s = Tensor::from_f32(vec![7.0], ()).unwrap();
    assert_eq!((s.rank(), s.to_vec_f32().unwrap()), (0, vec![7.0]));
    assert_eq!(
        Tensor::from_i32(vec![1, -2], [2])
            .unwrap()
            .to_vec_i32()
            .unwrap(),
        vec![1, -2]
    );
    assert_eq!(
        Tensor::from_i8(vec![-128, 127], [2])
            .unwrap()
            .to_vec_i8()
            .unwrap(),
        vec![-128, 127]
    );
    assert_eq!(Tensor::zeros([2, 2]).to_vec_f32().unwrap(), vec![0.0; 4]);
    assert_err(Tensor::from_f32(iota(5), [2, 3]), "StorageTooSmall");
    assert_err(Tensor::from_f32(iota(7), [2, 3]), "LengthMismatch");
    assert_err(Tensor::from_f32(vec![], [usize::MAX, 3]), "SizeOverflow");
    assert_err(Tensor::try_zeros([usize::MAX / 2]), "AllocationFailed");
    assert_err(t.to_vec_i32(), "DTypeMismatch");
}

#[test]
fn quantized_construction_rules() {
    let q = Tensor::from_quantized(DType::Q4_0, vec![0; 2 * 18 * 2], [2, 64]).unwrap();
    assert_eq!(q.dtype(), DType::Q4_0);
    assert!(q.is_contiguous());
    assert_err(
        Tensor::from_quantized(DType::Q4_0, vec![0; 18], [2, 16]),
        "PartialQuantizedBlock",
    );
    assert_err(
        Tensor::from_quantized(DType::Q8_0, vec![0; 33], [32]),
        "StorageTooSmall",
    );
    assert_err(
        Tensor::from_quantized(DType::Q8_0, vec![0; 35], [32]),
        "LengthMismatch",
    );
    assert_err(
        Tensor::from_quantized(DType::F32, vec![0; 4], [1]),
        "UnsupportedDType",
    );
    // No element views of quantized data.
    assert_err(q.transpose(0, 1), "QuantizedElementAccess");
    assert_err(q.narrow(0, 0, 1), "QuantizedElementAccess");
    assert_err(q.broadcast_to([3, 2, 64]), "QuantizedElementAccess");
    assert_err(q.reshape([64, 2]), "QuantizedElementAccess");
    assert_err(q.permute(&[1, 0]), "QuantizedElementAccess");
    assert_err(q.to_vec_f32(), "QuantizedElementAccess");
    assert_err(q.add(&q), "QuantizedElementAccess");
    // A copy keeps the blocks.
    assert_eq!(
        q.contiguous().unwrap().quantized_bytes().unwrap(),
        q.quantized_bytes().unwrap()
    );
}

#[test]
fn views_share_storage_and_match_index_gather() {
    let data = iota(2 * 3 * 4);
    let t = Tensor::from_f32(data.clone(), [2, 3, 4]).unwrap();
    let views = [
        t.transpose(0, 2).unwrap(),
        t.permute(&[1, 2, 0]).unwrap(),
        t.narrow(1, 1, 2).unwrap(),
        t.narrow(2, 3, 1).unwrap().transpose(0, 1).unwrap(),
        t.narrow(0, 1, 1).unwrap().reshape([3, 4]).unwrap(),
        t.narrow(1, 0, 1)
            .unwrap()
            .broadcast_to([5, 2, 3, 4])
            .unwrap(),
        t.transpose(1, 2).unwrap().narrow(1, 1, 2).unwrap(),
        t.narrow(2, 0, 0).unwrap(),
    ];
    for v in &views {
        assert!(v.shares_storage_with(&t), "{v:?}");
        assert_eq!(v.to_vec_f32().unwrap(), gather_by_index(&data, v), "{v:?}");
        let c = v.contiguous().unwrap();
        assert!(c.is_contiguous());
        assert_eq!(c.to_vec_f32().unwrap(), gather_by_index(&data, v));
    }
    // transpose(0, 2) of [2,3,4]: element (i, j, k) is t[k, j, i].
    let tr = &views[0];
    assert_eq!(tr.dims(), &[4, 3, 2]);
    for idx in indices(tr.dims()) {
        let want = data[idx[2] * 12 + idx[1] * 4 + idx[0]];
        let got = tr
            .narrow(0, idx[0], 1)
            .unwrap()
            .narrow(1, idx[1], 1)
            .unwrap()
            .narrow(2, idx[2], 1)
            .unwrap();
        assert_eq!(got.to_vec_f32().unwrap(), vec![want]);
    }
    assert!(!views[5].is_contiguous() && views[5].is_broadcast());
}

#[test]
fn reshape_copies_only_when_not_contiguous() {
    let t = Tensor::from_f32(iota(12), [3, 4]).unwrap();
    let r = t.reshape([2, 6]).unwrap();
    assert!(r.shares_storage_with(&t));
    let tt = t.transpose(0, 1).unwrap();
    let r2 = tt.reshape([12]).unwrap();
    assert!(!r2.shares_storage_with(&t));
    assert_eq!(r2.to_vec_f32().unwrap(), gather_by_index(&iota(12), &tt));
    assert_err(t.reshape([5]), "ShapeMismatch");
}

#[test]
fn view_errors() {
    let t = Tensor::from_f32(iota(6), [2, 3]).unwrap();
    assert_err(t.transpose(0, 2), "AxisOutOfRange");
    assert_err(t.narrow(1, 2, 2), "NarrowOutOfRange");
    assert_err(t.narrow(1, usize::MAX, 2), "NarrowOutOfRange");
    assert_err(t.narrow(5, 0, 1), "AxisOutOfRange");
    assert_err(t.broadcast_to([3, 3]), "NotBroadcastable");
    assert_err(t.broadcast_to([3]), "NotBroadcastable");
    assert_err(t.permute(&[0, 0]), "ShapeMismatch");
    assert_err(t.permute(&[0]), "ShapeMismatch");
    assert_err(t.permute(&[0, 7]), "AxisOutOfRange");
}

/// The copy paths of `copy_strided`: memcpy rows, fill rows (broadcast), strided rows, and the
/// threaded split for large copies — all against the index gather, for random views.
#[test]
fn copies_match_index_gather_on_random_views() {
    let mut rng = Rng::new(7);
    for round in 0..200 {
        let rank = 1 + rng.below(4);
        let dims: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
        let n: usize = dims.iter().product();
        let data: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
        let mut v = Tensor::from_f32(data.clone(), dims.clone()).unwrap();
        for _ in 0..3 {
            let r = v.rank();
            v = match rng.below(4) {
                0 => v.transpose(rng.below(r), rng.below(r)).unwrap(),
                1 => {
                    let ax = rng.below(r);
                    let size = v.dims()[ax];
                    let start = rng.below(size);
                    v.narrow(ax, start, 1 + rng.below(size - start)).unwrap()
                }
                2 => {
                    // Stretch a size-1 axis or add a leading one.
                    let mut to = v.dims().to_vec();
                    to.insert(0, 1 + rng.below(3));
                    for d in to.iter_mut().skip(1) {
                        if *d == 1 {
                            *d = 1 + rng.below(4);
                        }
                    }
                    v.broadcast_to(to).unwrap()
                }
                _ => {
                    let mut p: Vec<usize> = (0..r).collect();
                    p.rotate_left(rng.below(r.max(1)));
                    v.permute(&p).unwrap()
                }
            };
        }
        let want = gather_by_index(&data, &v);
        assert_eq!(
            v.contiguous().unwrap().to_vec_f32().unwrap(),
            want,
            "round {round}: {v:?}"
        );
    }
}

#[test]
fn large_transposed_and_broadcast_copies_take_the_threaded_path() {
    // 512 x 300 = 153 600 elements >= 2^16 with many blocks: split over the pool.
    let (r, c) = (512, 300);
    let data: Vec<f32> = (0..r * c).map(|i| i as f32).collect();
    let t = Tensor::from_f32(data.clone(), [r, c]).unwrap();
    let tt = t.transpose(0, 1).unwrap().contiguous().unwrap();
    let got = tt.to_vec_f32().unwrap();
    for i in 0..c {
        for j in 0..r {
            assert_eq!(got[i * r + j], data[j * c + i]);
        }
    }
    // A 3-D view with outer blocks: [4, r, c] broadcast then transposed inner axes.
    let b = t.broadcast_to([4, r, c]).unwrap().transpose(1, 2).unwrap();
    assert_eq!(
        b.contiguous().unwrap().to_vec_f32().unwrap(),
        gather_by_index(&data, &b)
    );
    // Plain contiguous copy: one memcpy.
    assert_eq!(t.copy().unwrap().to_vec_f32().unwrap(), data);
}

#[test]
fn to_dtype_rules() {
    let t = Tensor::from_f32(vec![1.5, -2.0], [2]).unwrap();
    assert!(t.to_dtype(DType::F32).unwrap().shares_storage_with(&t));
    assert_eq!(
        t.to_dtype(DType::F16).unwrap().to_vec_f16_bits().unwrap(),
        vec![0x3E00, 0xC000]
    );
    assert_eq!(
        t.to_dtype(DType::BF16).unwrap().to_vec_bf16_bits().unwrap(),
        vec![0x3FC0, 0xC000]
    );
    for d in [DType::I8, DType::I32, DType::Q4_0, DType::Q8_0] {
        assert_err(t.to_dtype(d), "UnsupportedDType");
    }
    let i = Tensor::from_i32(vec![1], [1]).unwrap();
    assert_err(i.to_dtype(DType::F32), "UnsupportedDType");
    // f16 views convert through the strided path.
    let h = Tensor::from_f16(vec![0x3C00, 0x4000, 0x4200, 0x4400], [2, 2]).unwrap();
    let ht = h.transpose(0, 1).unwrap().to_dtype(DType::F32).unwrap();
    assert_eq!(ht.to_vec_f32().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
}
