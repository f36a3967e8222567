//! The quantized kernels of this build (scalar natively, simd128 / relaxed-SIMD in the browser)
//! against their scalar twins — bit for bit — and the scalar twins against dequantize-then-f64.

mod common;

use common::Rng;
use half::f16;
use kopitiam_wasm::quant::kernels::{self, scalar};
use kopitiam_wasm::quant::{
    dequantize_row_q4_0, dequantize_row_q8_0, interleave, q5_0_to_q8_0, quantize_row_q8_k, Q8Act,
};
use kopitiam_wasm::DType;

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;
#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// Random blocks with finite random f16 scales (and some zero / max-magnitude scales).
fn random_blocks(rng: &mut Rng, blocks: usize, block_bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(blocks * block_bytes);
    for b in 0..blocks {
        let d = match b % 7 {
            0 => 0.0,
            1 => 65504.0,
            _ => rng.f32() * 0.1,
        };
        out.extend(f16::from_f32(d).to_bits().to_le_bytes());
        out.extend((2..block_bytes).map(|_| rng.next_u64() as u8));
        if b % 5 == 3 {
            // Extreme quants: every i8 at -128 / every nibble at 0.
            let start = out.len() - (block_bytes - 2);
            out[start..].fill(0x80);
        }
    }
    out
}

#[test]
fn this_build_uses_the_expected_kernels() {
    let want = if cfg!(target_feature = "relaxed-simd") {
        "relaxed-simd"
    } else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        "simd128"
    } else {
        "scalar"
    };
    assert_eq!(kernels::KERNELS, want);
}

/// Bits, with every NaN counted as one value (payloads may differ between instruction sets).
fn canonical_bits(v: f32) -> u32 {
    if v.is_nan() {
        0x7FC0_0000
    } else {
        v.to_bits()
    }
}

/// A gemm call that fills its output.
type Fill<'a> = &'a dyn Fn(&mut [f32]);

/// `out[r·n_w + o] = w_o · x_r` over prepared activations.
type Gemm = fn(&[u8], &Q8Act, &mut [f32]);

/// A fast gemm and its scalar twin (`[fast, twin]`, each filling `out[r·n_w + o]`) give the
/// same bits for `n_w` weight rows against `rows` activation rows, and the twin's element
/// `(r, o)` is `dot(o, r)`, weight row `o`'s dot with activation row `r` (the layout). `what`
/// names the case in a failure.
fn assert_gemm_twins(
    [fast, twin]: [Fill; 2],
    dot: impl Fn(usize, usize) -> f32,
    (n_w, rows): (usize, usize),
    what: &str,
) {
    let (mut a, mut b) = (vec![0.0f32; n_w * rows], vec![0.0f32; n_w * rows]);
    fast(&mut a);
    twin(&mut b);
    for (i, (p, q)) in a.iter().zip(&b).enumerate() {
        let (p, q) = (canonical_bits(*p), canonical_bits(*q));
        assert_eq!(p, q, "{what}, element {i}: {p:#x} vs {q:#x}");
    }
    for o in 0..n_w {
        for r in 0..rows {
            let want = canonical_bits(dot(o, r));
            assert_eq!(canonical_bits(b[r * n_w + o]), want, "{what}, ({r}, {o})");
        }
    }
}

/// [`assert_gemm_twins`] for gemms of `n_w` weight rows `w` in the file's layout over prepared
/// Q8_0 activations, the twin's element `(r, o)` being `dot` of row `o` with activation row `r`.
fn assert_q8_act_gemm_twins(
    [fast, twin]: [Gemm; 2],
    dot: fn(&[u8], &[u8]) -> f32,
    w: &[u8],
    act: &Q8Act,
    n_w: usize,
) {
    let w_row = w.len() / n_w;
    assert_gemm_twins(
        [&|out| fast(w, act, out), &|out| twin(w, act, out)],
        |o, r| dot(&w[o * w_row..][..w_row], act.q8_row(r)),
        (n_w, act.rows()),
        &format!("rows {}, blocks {}", act.rows(), act.blocks()),
    );
}

#[test]
fn tiled_q4_0_gemm_equals_scalar_twin_bit_for_bit() {
    let mut rng = Rng::new(11);
    // Row counts around the 4-row tile; block counts with and without a ragged tail.
    for (rows, blocks) in [(1, 20), (1, 7), (2, 3), (4, 20), (5, 64), (7, 1), (9, 6)] {
        let n_in = blocks * 32;
        let n_w = 5;
        let mut w = random_blocks(&mut rng, n_w * blocks, 18);
        // Special weight scales: subnormal, negative, infinite, NaN.
        for (i, bits) in [0x0001u16, 0x83FF, 0xBC00, 0x7C00, 0x7E01, 0xFC00]
            .iter()
            .enumerate()
        {
            let at = (i * 7 % (n_w * blocks)) * 18;
            w[at..at + 2].copy_from_slice(&bits.to_le_bytes());
        }
        let x: Vec<f32> = (0..rows * n_in)
            .map(|i| match i % 37 {
                0 => 0.0,
                1 => -1e4,
                _ => rng.f32() * 4.0 - 2.0,
            })
            .collect();
        let mut act = Q8Act::default();
        act.prepare(&x, n_in).unwrap();
        let gemms = [kernels::gemm_q4_0_q8_0 as Gemm, scalar::gemm_q4_0_q8_0];
        assert_q8_act_gemm_twins(gemms, scalar::vec_dot_q4_0_q8_0, &w, &act, n_w);
    }
}

/// `out[r·n_w + o] = w_o · x_r` in the file's layout, one scalar dot per output: the oracle of
/// the interleaved kernels.
fn file_layout_gemm(dtype: DType, w: &[u8], act: &Q8Act, n_w: usize) -> Vec<f32> {
    let row = w.len() / n_w;
    let dot = match dtype {
        DType::Q4_0 => scalar::vec_dot_q4_0_q8_0,
        DType::Q8_0 => scalar::vec_dot_q8_0_q8_0,
        _ => scalar::vec_dot_q5_0_q8_0,
    };
    (0..act.rows())
        .flat_map(|r| (0..n_w).map(move |o| (r, o)))
        .map(|(r, o)| dot(&w[o * row..(o + 1) * row], act.q8_row(r)))
        .collect()
}

#[test]
fn interleaved_formats_round_trip_and_their_gemms_equal_the_file_layout_bit_for_bit() {
    let mut rng = Rng::new(29);
    for (dtype, fast, twin) in [
        (
            DType::Q4_0,
            kernels::gemm_q4_0x4_q8_0 as Gemm,
            scalar::gemm_q4_0x4_q8_0 as Gemm,
        ),
        (
            DType::Q5_0,
            kernels::gemm_q5_0x4_q8_0,
            scalar::gemm_q5_0x4_q8_0,
        ),
        (
            DType::Q8_0,
            kernels::gemm_q8_0x4_q8_0,
            scalar::gemm_q8_0x4_q8_0,
        ),
    ] {
        let bb = dtype.block_bytes();
        for (rows, blocks, n_w) in [
            (1, 20, 8),
            (1, 7, 4),
            (2, 3, 12),
            (3, 5, 8),
            (4, 20, 4),
            (7, 1, 8),
            (9, 6, 16),
            // Two-group tiles with an odd group left, and with whole tiles only.
            (5, 3, 12),
            (8, 5, 8),
        ] {
            let n_in = blocks * 32;
            let mut w = match dtype {
                DType::Q4_0 | DType::Q8_0 => random_blocks(&mut rng, n_w * blocks, bb),
                _ => random_mix_blocks(&mut rng, dtype, n_w * blocks),
            };
            if rows == 3 || rows == 9 {
                // The largest finite f16 scale and a negative subnormal one (the ×4 kernels
                // convert scales without the inf/NaN check).
                w[bb * (blocks + 1)..][..2].copy_from_slice(&0x7BFFu16.to_le_bytes());
                w[bb * (3 * blocks)..][..2].copy_from_slice(&0x8001u16.to_le_bytes());
            }
            let mut wi = w.clone();
            assert!(interleave::interleave(dtype, &mut wi, blocks).unwrap());
            assert_ne!(wi, w, "interleaving moved nothing");
            let mut back = vec![0u8; w.len()];
            interleave::deinterleave_rows(dtype, &wi, blocks, 0..n_w, &mut back);
            assert_eq!(back, w, "{dtype} round trip, {n_w} rows of {blocks} blocks");
            let mut mid = vec![0u8; 3 * blocks * bb];
            interleave::deinterleave_rows(dtype, &wi, blocks, 1..4, &mut mid);
            assert_eq!(mid, w[blocks * bb..4 * blocks * bb], "{dtype} rows 1..4");

            let x: Vec<f32> = (0..rows * n_in).map(|_| rng.f32() * 4.0 - 2.0).collect();
            let mut act = Q8Act::default();
            act.prepare(&x, n_in).unwrap();
            let want = file_layout_gemm(dtype, &w, &act, n_w);
            for (name, gemm) in [("this build", fast), ("scalar twin", twin)] {
                let mut got = vec![0.0f32; n_w * rows];
                gemm(&wi, &act, &mut got);
                for (i, (p, q)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        canonical_bits(*p),
                        canonical_bits(*q),
                        "{dtype} {name}: rows {rows}, blocks {blocks}, element {i}: {p} vs {q}"
                    );
                }
            }
        }
        assert_non_finite_scales_stay(&mut rng, dtype, &[0]);
        // Not whole groups: a typed error, nothing moved.
        let mut odd = random_blocks(&mut rng, 6, bb);
        let before = odd.clone();
        assert!(interleave::interleave(dtype, &mut odd, 2).is_err());
        assert_eq!(odd, before);
        // No rows: nothing to move.
        assert!(interleave::interleave(dtype, &mut [], 2).unwrap());
    }
    // The Q5_0 bit planes by hand: row 2's fifth bit of element 17 (high nibble of v[0], lane
    // 4·2 + 1) is plane 1 of byte 9; element 6 (low nibble of v[1], lane 4·2 + 2) plane 2 of
    // byte 10.
    let mut g = vec![0u8; 4 * DType::Q5_0.block_bytes()];
    let qh = (1u32 << 17) | (1 << 6);
    g[2 * 22 + 2..2 * 22 + 6].copy_from_slice(&qh.to_le_bytes());
    interleave::interleave(DType::Q5_0, &mut g, 1).unwrap();
    let mut planes = [0u8; 16];
    (planes[9], planes[10]) = (1 << 1, 1 << 2);
    assert_eq!(g[interleave::Q5_HIGH..], planes);
    // A format without a ×4 layout: a typed error, and nothing read back (an F32 "block" is
    // shorter than the offsets the layout reads: no panic).
    let mut q4_1 = random_blocks(&mut rng, 8, DType::Q4_1.block_bytes());
    assert!(interleave::interleave(DType::Q4_1, &mut q4_1, 2).is_err());
    let mut out = vec![7u8; 16];
    interleave::deinterleave_rows(DType::F32, &[1u8; 64], 1, 0..4, &mut out);
    assert_eq!(out, vec![7u8; 16]);
}

/// A matrix with an infinite or a NaN f16 scale at any of `scales` (byte offsets in a block) is
/// not interleaved: `interleave` says so and leaves the bytes, so the file layout's kernels, which
/// carry the inf/NaN through, run it.
fn assert_non_finite_scales_stay(rng: &mut Rng, dtype: DType, scales: &[usize]) {
    let bb = dtype.block_bytes();
    let specials = [0x7C00u16, 0xFC00, 0x7E01, 0xFFFF];
    // Blocks 5 and 20: in the first group and the last (which threads may take apart).
    for ((&at, bits), block) in scales.iter().cycle().zip(specials).zip([5, 20].repeat(2)) {
        let mut w = random_mix_blocks(rng, dtype, 8 * 3);
        w[bb * block + at..][..2].copy_from_slice(&bits.to_le_bytes());
        let before = w.clone();
        let moved = interleave::interleave(dtype, &mut w, 3).unwrap();
        assert!(!moved && w == before, "{dtype} {bits:#x}: interleaved");
    }
}

/// Q4_K, Q5_K and Q6_K in the ×4 layout: the round trip, and this build's kernels and the scalar
/// twins against the file layout's scalar dots (`vec_dot_q4_k_q8_k`, …) for one to
/// nine activation rows (tiles of four and the rest), with the largest finite and a subnormal
/// f16 scale in some groups and, with two or more activation blocks, one block of saturated −128
/// quants (the widest i16 sums); an inf/NaN scale keeps a matrix in the file's layout.
#[test]
fn interleaved_k_formats_round_trip_and_their_gemms_equal_the_file_layout_bit_for_bit() {
    type Dot = fn(&[u8], &[u8]) -> f32;
    let mut rng = Rng::new(31);
    let q8k = DType::Q8_K.block_bytes();
    for (dtype, dot, d_at) in [
        (DType::Q4_K, scalar::vec_dot_q4_k_q8_k as Dot, [0, 2]),
        (DType::Q5_K, scalar::vec_dot_q5_k_q8_k, [0, 2]),
        (DType::Q6_K, scalar::vec_dot_q6_k_q8_k, [208, 208]),
    ] {
        let bb = dtype.block_bytes();
        for (rows, blocks, n_w) in [
            (1, 3, 8),
            (1, 1, 4),
            (2, 2, 12),
            (3, 1, 8),
            (4, 4, 4),
            (5, 2, 8),
            (9, 1, 16),
        ] {
            let mut w = random_mix_blocks(&mut rng, dtype, n_w * blocks);
            if rows == 3 || rows == 9 {
                // The largest finite d, and a negative subnormal dmin (Q4_K, Q5_K) or d (Q6_K).
                w[bb * (blocks + 1) + d_at[0]..][..2].copy_from_slice(&0x7BFFu16.to_le_bytes());
                w[bb * (3 * blocks) + d_at[1]..][..2].copy_from_slice(&0x8001u16.to_le_bytes());
            }
            let mut wi = w.clone();
            assert!(interleave::interleave(dtype, &mut wi, blocks).unwrap());
            assert_ne!(wi, w, "interleaving moved nothing");
            let mut back = vec![0u8; w.len()];
            interleave::deinterleave_rows(dtype, &wi, blocks, 0..n_w, &mut back);
            assert_eq!(back, w, "{dtype} round trip, {n_w} rows of {blocks} blocks");

            let x_row = blocks * q8k;
            let x: Vec<f32> = (0..rows * blocks * 256)
                .map(|_| rng.f32() * 4.0 - 2.0)
                .collect();
            let mut xq = vec![0u8; rows * x_row];
            quantize_row_q8_k(&x, &mut xq);
            if rows * blocks > 1 {
                saturate_q8_k_block(&mut xq, 1);
            }
            let want: Vec<f32> = (0..rows)
                .flat_map(|r| (0..n_w).map(move |o| (r, o)))
                .map(|(r, o)| {
                    dot(
                        &w[o * blocks * bb..][..blocks * bb],
                        &xq[r * x_row..][..x_row],
                    )
                })
                .collect();
            let gemms = [
                (
                    "this build",
                    kernels::gemm_kx4_q8_k as fn(_, &_, &_, _, &mut _),
                ),
                ("scalar twin", scalar::gemm_kx4_q8_k),
            ];
            for (name, gemm) in gemms {
                let mut got = vec![0.0f32; n_w * rows];
                gemm(dtype, &wi, &xq, x_row, &mut got);
                for (i, (p, q)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        canonical_bits(*p),
                        canonical_bits(*q),
                        "{dtype} {name}: rows {rows}, blocks {blocks}, element {i}: {p} vs {q}"
                    );
                }
            }
        }
        assert_non_finite_scales_stay(&mut rng, dtype, &d_at);
    }
}

#[test]
fn block_dots_equal_scalar_twins_bit_for_bit() {
    let mut rng = Rng::new(5);
    for blocks in [1, 2, 3, 7, 20, 64] {
        for _ in 0..20 {
            let w4 = random_blocks(&mut rng, blocks, 18);
            let mut w8 = random_blocks(&mut rng, blocks, 34);
            let x8 = random_blocks(&mut rng, blocks, 34);
            // Now and then an inf, NaN or subnormal scale (the SIMD path hands those rows to
            // the scalar scale decoding).
            if rng.below(3) == 0 {
                let bits: u16 = [0x7C00, 0xFE00, 0x0001, 0x8001][rng.below(4)];
                let at = rng.below(blocks) * 34;
                w8[at..at + 2].copy_from_slice(&bits.to_le_bytes());
            }
            let (a, b) = (
                kernels::vec_dot_q4_0_q8_0(&w4, &x8),
                scalar::vec_dot_q4_0_q8_0(&w4, &x8),
            );
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "q4_0·q8_0, {blocks} blocks: {a} vs {b}"
            );
            let (a, b) = (
                kernels::vec_dot_q8_0_q8_0(&w8, &x8),
                scalar::vec_dot_q8_0_q8_0(&w8, &x8),
            );
            assert_eq!(
                canonical_bits(a),
                canonical_bits(b),
                "q8_0·q8_0, {blocks} blocks: {a} vs {b}"
            );
        }
    }
}

/// Random blocks of a K-quant mix format with finite f16 scales where the format keeps them
/// (some zero, some ±max), every other byte random; a few blocks with saturated quants.
fn random_mix_blocks(rng: &mut Rng, dtype: DType, blocks: usize) -> Vec<u8> {
    let bb = dtype.block_bytes();
    let mut out: Vec<u8> = (0..blocks * bb).map(|_| rng.next_u64() as u8).collect();
    for (b, block) in out.chunks_exact_mut(bb).enumerate() {
        let mut scale = || {
            let d = match rng.below(9) {
                0 => 0.0,
                1 => -65504.0,
                _ => rng.f32() * 0.1,
            };
            f16::from_f32(d).to_bits().to_le_bytes()
        };
        let (at, count) = match dtype {
            DType::Q6_K => (208, 1),
            DType::Q4_K | DType::Q5_K => (0, 2),
            _ => (0, 1),
        };
        for k in 0..count {
            block[at + 2 * k..at + 2 * k + 2].copy_from_slice(&scale());
        }
        if b % 5 == 3 {
            let quants = match dtype {
                DType::Q6_K => 0..192,
                DType::Q5_0 => 2..22,
                _ => 16..bb,
            };
            block[quants].fill(0xFF);
        }
    }
    out
}

/// Q8_K activation rows quantized from random floats (so `bsums` agree with the quants), with
/// one block of saturated raw quants -128 (outside what the quantizer writes, still summed exactly).
fn random_q8_k(rng: &mut Rng, blocks: usize) -> Vec<u8> {
    let x: Vec<f32> = (0..blocks * 256).map(|_| rng.f32() * 3.0).collect();
    let mut q = vec![0u8; blocks * 292];
    quantize_row_q8_k(&x, &mut q);
    if blocks > 1 {
        saturate_q8_k_block(&mut q, 1);
    }
    q
}

/// Q8_K block `b` of `q` saturated (every quant −128), its 16-element sums to match: the kernels
/// take the Q6_K offset and the Q4_K/Q5_K mins from them.
fn saturate_q8_k_block(q: &mut [u8], b: usize) {
    let block = &mut q[292 * b..292 * (b + 1)];
    block[4..260].fill(0x80);
    for s in block[260..].chunks_exact_mut(2) {
        s.copy_from_slice(&(-16 * 128i16).to_le_bytes());
    }
}

#[test]
fn k_mix_dots_equal_scalar_twins_bit_for_bit() {
    type Dot = fn(&[u8], &[u8]) -> f32;
    let mut rng = Rng::new(23);
    let k_dots: [(DType, Dot, Dot); 3] = [
        (
            DType::Q4_K,
            kernels::vec_dot_q4_k_q8_k,
            scalar::vec_dot_q4_k_q8_k,
        ),
        (
            DType::Q5_K,
            kernels::vec_dot_q5_k_q8_k,
            scalar::vec_dot_q5_k_q8_k,
        ),
        (
            DType::Q6_K,
            kernels::vec_dot_q6_k_q8_k,
            scalar::vec_dot_q6_k_q8_k,
        ),
    ];
    for blocks in [1, 2, 3, 8] {
        for _ in 0..20 {
            let x = random_q8_k(&mut rng, blocks);
            for (dtype, fast, twin) in k_dots {
                let w = random_mix_blocks(&mut rng, dtype, blocks);
                let (a, b) = (fast(&w, &x), twin(&w, &x));
                assert_eq!(
                    canonical_bits(a),
                    canonical_bits(b),
                    "{dtype}, {blocks} blocks: {a} vs {b}"
                );
            }
        }
    }
    for blocks in [1, 2, 3, 4, 5, 7, 20] {
        for _ in 0..20 {
            let w = random_mix_blocks(&mut rng, DType::Q5_0, blocks);
            let x = random_blocks(&mut rng, blocks, 34);
            let (a, b) = (
                kernels::vec_dot_q5_0_q8_0(&w, &x),
                scalar::vec_dot_q5_0_q8_0(&w, &x),
            );
            assert_eq!(
                canonical_bits(a),
                canonical_bits(b),
                "q5_0, {blocks} blocks: {a} vs {b}"
            );
        }
    }
}

#[test]
fn tiled_q8_0_gemm_equals_scalar_twin_and_q5_0_reencodes_exactly() {
    let mut rng = Rng::new(29);
    for (rows, blocks) in [(1, 20), (4, 3), (5, 20), (8, 7), (9, 1), (13, 6)] {
        let n_in = blocks * 32;
        let n_w = 6;
        let mut w = random_blocks(&mut rng, n_w * blocks, 34);
        if rows % 2 == 1 {
            // An infinite scale in weight row 1 and a NaN in row 5.
            for (row, bits) in [(1, 0x7C00u16), (5, 0x7E01)] {
                let at = (row * blocks + blocks / 2) * 34;
                w[at..at + 2].copy_from_slice(&bits.to_le_bytes());
            }
        }
        let x: Vec<f32> = (0..rows * n_in).map(|_| rng.f32() * 3.0).collect();
        let mut act = Q8Act::default();
        act.prepare(&x, n_in).unwrap();
        let gemms = [kernels::gemm_q8_0_q8_0 as Gemm, scalar::gemm_q8_0_q8_0];
        assert_q8_act_gemm_twins(gemms, scalar::vec_dot_q8_0_q8_0, &w, &act, n_w);
        // A Q5_0 row re-encoded as Q8_0 dots to the Q5_0 dot's bits.
        let w5 = random_mix_blocks(&mut rng, DType::Q5_0, blocks);
        let mut w8 = vec![0u8; blocks * 34];
        q5_0_to_q8_0(&w5, &mut w8);
        for r in 0..rows {
            let (p, q) = (
                scalar::vec_dot_q8_0_q8_0(&w8, act.q8_row(r)),
                scalar::vec_dot_q5_0_q8_0(&w5, act.q8_row(r)),
            );
            assert_eq!(
                canonical_bits(p),
                canonical_bits(q),
                "q5_0 re-encoded, row {r}"
            );
        }
    }
}

#[test]
fn k_gemm_tiles_equal_scalar_twin_bit_for_bit() {
    type Dot = fn(&[u8], &[u8]) -> f32;
    let mut rng = Rng::new(31);
    let formats: [(DType, Dot); 3] = [
        (DType::Q4_K, scalar::vec_dot_q4_k_q8_k),
        (DType::Q5_K, scalar::vec_dot_q5_k_q8_k),
        (DType::Q6_K, scalar::vec_dot_q6_k_q8_k),
    ];
    for (rows, blocks) in [(1, 2), (4, 1), (5, 3), (8, 2), (11, 1)] {
        let x_row = blocks * 292;
        let x: Vec<u8> = (0..rows)
            .flat_map(|_| random_q8_k(&mut rng, blocks))
            .collect();
        for (dtype, dot) in formats {
            let n_w = 5;
            let w = random_mix_blocks(&mut rng, dtype, n_w * blocks);
            let bb = dtype.block_bytes();
            assert_gemm_twins(
                [
                    &|out| kernels::gemm_k_q8_k(dtype, &w, &x, x_row, out),
                    &|out| scalar::gemm_k_q8_k(dtype, &w, &x, x_row, out),
                ],
                |o, r| {
                    dot(
                        &w[o * blocks * bb..][..blocks * bb],
                        &x[r * x_row..][..x_row],
                    )
                },
                (n_w, rows),
                &format!("{dtype}, rows {rows}"),
            );
        }
    }
}

#[test]
fn signed_byte_sums_equal_scalar_twin() {
    // The inner integer sum of the K-quant and Q5_0 dots, at odd lengths and extreme values.
    let mut rng = Rng::new(31);
    for n in [0, 1, 15, 16, 17, 32, 33, 256, 1000] {
        let a: Vec<i8> = (0..n)
            .map(|i| {
                if i % 9 == 0 {
                    -128
                } else {
                    rng.next_u64() as i8
                }
            })
            .collect();
        let b: Vec<u8> = (0..n)
            .map(|i| {
                if i % 7 == 0 {
                    0x80
                } else {
                    rng.next_u64() as u8
                }
            })
            .collect();
        let want: i64 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| x as i64 * (y as i8) as i64)
            .sum();
        assert_eq!(kernels::isum_i8(&a, &b) as i64, want, "n={n}");
        assert_eq!(scalar::isum_i8(&a, &b) as i64, want, "n={n}");
    }
}

/// The int8 GEMM of Tesseract's layers: every tiling (four activation rows per weight row, four
/// weight rows per activation row, remainders), the relaxed build's sign-split dots and their
/// −128 fallback, against the scalar twin and an i64 loop.
#[test]
fn int8_gemm_equals_scalar_twin() {
    let mut rng = Rng::new(47);
    for (m, k, n) in [
        (1, 9, 16),
        (1, 288, 768),
        (3, 64, 7),
        (4, 16, 5),
        (7, 144, 9),
        (16, 9, 16),
        (5, 31, 4),
        (2, 0, 3),
    ] {
        let w_row = k + 1;
        let w: Vec<i8> = (0..n * w_row).map(|_| rng.next_u64() as i8).collect();
        for with_min in [false, true] {
            let x: Vec<i8> = (0..m * k)
                .map(|i| {
                    let v = (rng.next_u64() % 255) as i8; // -127..=127 for the relaxed path
                    if with_min && i == k / 2 {
                        -128
                    } else {
                        v
                    }
                })
                .collect();
            let want: Vec<i64> = (0..m * n)
                .map(|i| {
                    let (r, o) = (i / n, i % n);
                    (0..k)
                        .map(|j| w[o * w_row + j] as i64 * x[r * k + j] as i64)
                        .sum()
                })
                .collect();
            let (mut a, mut b) = (vec![-1i32; m * n], vec![-1i32; m * n]);
            kernels::gemm_i8(&x, k, &w, w_row, &mut a);
            scalar::gemm_i8(&x, k, &w, w_row, &mut b);
            let what = format!("m={m} k={k} n={n} with -128: {with_min}");
            assert_eq!(
                a.iter().map(|&v| v as i64).collect::<Vec<_>>(),
                want,
                "{what}"
            );
            assert_eq!(b, a, "{what}");
        }
    }
}

#[test]
fn scalar_dots_match_dequantized_f64_dot() {
    let mut rng = Rng::new(9);
    for blocks in [1, 4, 9] {
        let w4 = random_blocks(&mut rng, blocks, 18);
        let w8 = random_blocks(&mut rng, blocks, 34);
        let x8 = random_blocks(&mut rng, blocks, 34);
        let n = blocks * 32;
        let (mut fw4, mut fw8, mut fx) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        dequantize_row_q4_0(&w4, &mut fw4);
        dequantize_row_q8_0(&w8, &mut fw8);
        dequantize_row_q8_0(&x8, &mut fx);
        for (w, got) in [
            (&fw4, scalar::vec_dot_q4_0_q8_0(&w4, &x8)),
            (&fw8, scalar::vec_dot_q8_0_q8_0(&w8, &x8)),
        ] {
            let want: f64 = w.iter().zip(&fx).map(|(&a, &b)| a as f64 * b as f64).sum();
            let mag: f64 = w
                .iter()
                .zip(&fx)
                .map(|(&a, &b)| (a as f64 * b as f64).abs())
                .sum();
            assert!(
                (got as f64 - want).abs() <= 1e-5 * mag + 1e-30,
                "{got} vs {want}"
            );
        }
    }
}

#[test]
fn activation_quantizer_equals_ref_bit_for_bit() {
    let mut rng = Rng::new(2);
    let mut cases: Vec<Vec<f32>> = Vec::new();
    // Exact halves (amax = 127 -> d = 1, id = 1): round half away from zero.
    let mut halves = vec![0.0f32; 32];
    for (i, v) in halves.iter_mut().enumerate() {
        *v = (i as f32 - 16.0) + 0.5;
    }
    halves[31] = 127.0;
    cases.push(halves);
    // Either side of each half (and of 0.5 itself), where a rounding shortcut would slip.
    let near: Vec<f32> = (-64..64)
        .flat_map(|k| {
            let h = k as f32 + 0.5;
            [
                f32::from_bits(h.to_bits() - 1),
                f32::from_bits(h.to_bits() + 1),
            ]
        })
        .collect();
    for block in near.chunks_exact(31) {
        cases.push(block.iter().copied().chain([127.0]).collect());
    }
    cases.push(vec![0.0; 64]); // all zero: d = 0
    cases.push(vec![-3.0; 32]);
    cases.push((0..32).map(|i| if i == 5 { 1e30 } else { 1.0 }).collect());
    cases.push(
        (0..32)
            .map(|i| if i == 0 { f32::MIN_POSITIVE } else { 0.0 })
            .collect(),
    );
    // Non-finite inputs: a NaN is passed over by the max and quantizes to 0; an infinity
    // makes d infinite and id 0.
    let mut odd = rng.vec(96, 4.0);
    (odd[3], odd[40], odd[70], odd[71]) = (f32::NAN, f32::INFINITY, f32::NAN, f32::NEG_INFINITY);
    cases.push(odd);
    for n in [32, 96, 640] {
        cases.push(rng.vec(n, 10.0));
    }
    for x in cases {
        let mut a = vec![0u8; x.len() / 32 * 34];
        let mut b = a.clone();
        kernels::quantize_row_q8_0(&x, &mut a);
        kopitiam_wasm::quant::quantize_row_q8_0(&x, &mut b);
        assert_eq!(a, b, "input starting {:?}", &x[..4]);
        // With the blocks' quant sums: the same blocks, and the sums of their bytes.
        let mut sums = vec![i32::MIN; x.len() / 32];
        kernels::quantize_row_q8_0_sums(&x, &mut a, &mut sums);
        assert_eq!(a, b, "input starting {:?}", &x[..4]);
        let want: Vec<i32> = b
            .chunks_exact(34)
            .map(|ob| ob[2..].iter().map(|&q| i32::from(q as i8)).sum())
            .collect();
        assert_eq!(sums, want, "input starting {:?}", &x[..4]);
    }
}

mod f32_kernels {
    use super::Rng;
    use kopitiam_wasm::ops::kernels::{self as k, scalar as s, Arith};
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// `dot_grid`'s rows side by side.
    fn grid<const H: usize, const R: usize>(xs: [&[f32]; H], ys: [&[f32]; R]) -> Vec<f32> {
        let mut out = vec![f32::NAN; H * R];
        k::dot_grid(xs, ys, &mut out, H);
        out
    }

    #[test]
    fn grid_dot_four_way_axpy_and_weighted_rows_equal_single_calls() {
        let mut rng = Rng::new(23);
        for n in [0, 1, 5, 8, 31, 256, 257] {
            let xs: Vec<Vec<f32>> = (0..4).map(|_| rng.vec(n, 3.0)).collect();
            let xr = [&xs[0][..], &xs[1][..], &xs[2][..], &xs[3][..]];
            let y = rng.vec(n, 3.0);
            let y2 = rng.vec(n, 3.0);
            let grids = [
                grid(xr, [&y[..]]),
                grid(xr, [&y[..], &y2]),
                grid([xr[0]], [xr[1], &y, xr[2], &y2]),
                grid(xr, [&y[..], &y2, xr[1], xr[3]]),
                grid([xr[0], xr[2]], [&y[..], &y2, xr[1], xr[3]]),
            ];
            // Rows `step` apart leave what lies between them alone.
            let mut spaced = vec![f32::NAN; 11];
            k::dot_grid(xr, [&y[..], &y2], &mut spaced, 7);
            assert_eq!(spaced[..4], grids[1][..4], "dot_grid n={n} step 7, row 0");
            assert_eq!(spaced[7..], grids[1][4..], "dot_grid n={n} step 7, row 1");
            assert!(
                spaced[4..7].iter().all(|v| v.is_nan()),
                "dot_grid n={n} step 7"
            );
            // A row that the output cannot hold is left out, not a panic.
            let mut short = vec![f32::NAN; 6];
            k::dot_grid(xr, [&y[..], &y2], &mut short, 4);
            assert_eq!(
                short[..4],
                grids[1][..4],
                "dot_grid n={n} short output, row 0"
            );
            assert!(
                short[4..].iter().all(|v| v.is_nan()),
                "dot_grid n={n} short output"
            );
            // Row 1's offset overflows: row 0 is still written, nothing else.
            short.fill(f32::NAN);
            k::dot_grid(xr, [&y[..], &y2], &mut short, usize::MAX);
            assert_eq!(short[..4], grids[1][..4], "dot_grid n={n} huge step, row 0");
            assert!(
                short[4..].iter().all(|v| v.is_nan()),
                "dot_grid n={n} huge step"
            );
            // Every (head, row) pair of a grid, row by row.
            fn four_heads<'a>(
                xr: [&'a [f32]; 4],
                rows: &[&'a [f32]],
            ) -> Vec<(&'a [f32], &'a [f32])> {
                rows.iter().flat_map(|r| xr.map(|x| (x, *r))).collect()
            }
            let pairs = [
                four_heads(xr, &[&y]),
                four_heads(xr, &[&y, &y2]),
                [xr[1], &y, xr[2], &y2].map(|r| (xr[0], r)).to_vec(),
                four_heads(xr, &[&y, &y2, xr[1], xr[3]]),
                [&y[..], &y2, xr[1], xr[3]]
                    .iter()
                    .flat_map(|r| [(xr[0], *r), (xr[2], *r)])
                    .collect(),
            ];
            for (got, want) in grids.iter().zip(&pairs) {
                for (i, (g, (x, r))) in got.iter().zip(want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        s::dot(x, r).to_bits(),
                        "dot_grid n={n} entry {i}"
                    );
                }
            }
            let a = [0.3, -1.7, 2.5, 0.01];
            let (mut p, mut q) = (y.clone(), y.clone());
            k::axpy_rows(a, xr, &mut p);
            for (c, x) in a.iter().zip(xr) {
                s::axpy_rows([*c], [x], &mut q);
            }
            assert!(
                p.iter().zip(&q).all(|(u, v)| u.to_bits() == v.to_bits()),
                "axpy_rows::<4> n={n}"
            );
            check_weighted_rows::<1>(&mut rng, n);
            check_weighted_rows::<2>(&mut rng, n);
            check_weighted_rows::<4>(&mut rng, n);
        }
    }

    /// `T` heads' weights over rows of a strided buffer (`weighted_rows`), against `axpy_rows`
    /// row by row. Twenty rows: some have rows `TOUCH_AHEAD` ahead to prefetch.
    fn check_weighted_rows<const T: usize>(rng: &mut Rng, n: usize) {
        fn outputs<const T: usize>(outs: &mut [Vec<f32>]) -> [&mut [f32]; T] {
            let mut it = outs.iter_mut();
            core::array::from_fn(|_| it.next().unwrap().as_mut_slice())
        }
        for (rows, prefetch) in [0, 1, 3, 4, 9, 20]
            .into_iter()
            .flat_map(|r| [(r, false), (r, true)])
        {
            let stride = n + 3;
            let values = rng.vec(rows * stride, 3.0);
            let weights = rng.vec(T * rows, 2.0);
            // All of `x`, then `x` ending inside the last row or before it starts: no panic,
            // each row the elements `x` has of it, every output overwritten.
            let all = rows * stride;
            let ends = [Some(all), all.checked_sub(4), all.checked_sub(stride + 1)];
            for end in ends.into_iter().flatten() {
                let x = &values[..end];
                let mut outs: Vec<Vec<f32>> = (0..T).map(|_| rng.vec(n, 3.0)).collect();
                k::weighted_rows(&weights, x, stride, &mut outputs::<T>(&mut outs), prefetch);
                for (t, o) in outs.iter().enumerate() {
                    let mut want = vec![0.0; n];
                    for (j, c) in weights.chunks_exact(T).enumerate() {
                        let row = x.get(j * stride..).unwrap_or_default();
                        s::axpy_rows([c[t]], [&row[..n.min(row.len())]], &mut want);
                    }
                    assert!(
                        o.iter().zip(&want).all(|(u, v)| u.to_bits() == v.to_bits()),
                        "weighted_rows::<{T}> x of {end}/{all}, n={n} rows={rows} prefetch {prefetch} output {t}"
                    );
                }
            }
        }
    }

    /// Every finite f16 value, each rounding midpoint between neighbours and the f32s either side
    /// of it, with both signs: the inputs where an f32 → f16 rounding can go wrong.
    fn f16_boundaries() -> Vec<f32> {
        let mut x = Vec::new();
        for h in 0..0x7C00u32 {
            let v = kopitiam_wasm::quant::f16_to_f32(h as u16);
            let next = kopitiam_wasm::quant::f16_to_f32(h as u16 + 1);
            let mid = ((v as f64 + next as f64) / 2.0) as f32;
            for y in [
                v,
                mid,
                f32::from_bits(mid.to_bits() - 1),
                f32::from_bits(mid.to_bits() + 1),
            ] {
                x.extend([y, -y]);
            }
        }
        x
    }

    /// Rounding through f16 against `half` on every f16 value, each rounding midpoint and the
    /// f32s either side of it (both signs), the overflow threshold 65,520 and its neighbours, the
    /// non-finite, and a sweep of bit patterns; lengths leave a scalar tail.
    #[test]
    fn round_to_f16_equals_half_bit_for_bit() {
        let mut x = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1e-45];
        for t in [65504.0f32, 65519.996, 65520.0, 65520.004, 70000.0, 1e30] {
            x.extend([t, -t]);
        }
        x.extend(f16_boundaries());
        x.extend((0..=u32::MAX).step_by(65_521).map(f32::from_bits));
        x.push(0.5);
        let mut got = x.clone();
        k::round_to_f16(&mut got);
        for (g, &v) in got.iter().zip(&x) {
            let want = half::f16::from_f32(v).to_f32();
            assert_eq!(
                g.to_bits(),
                want.to_bits(),
                "input {v:e} ({:#x})",
                v.to_bits()
            );
        }
    }

    /// Every f16 rounding boundary (and the f32 values either side of it), the f16 values
    /// themselves, the ±10 cut-offs and the non-finite: the f16 index must be the scalar one's,
    /// the table bits decoded alike. A table of hashed entries catches a wrong index.
    #[test]
    fn gated_f16_table_equals_scalar_twin_bit_for_bit() {
        let table: Box<[u16; 65536]> = Box::new(core::array::from_fn(|h| {
            let h = h as u32;
            (h.wrapping_mul(40503) ^ (h >> 3)) as u16
        }));
        let mut x = vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1e-45,
            -1e-40,
        ];
        x.extend([10.0, -10.0, 9.999999, -9.999999, 10.000001, -10.000001]);
        x.extend(f16_boundaries());
        let mut rng = Rng::new(3);
        let up: Vec<f32> = (0..x.len()).map(|_| rng.f32() * 4.0 - 2.0).collect();
        let (mut got, mut want) = (x.clone(), x.clone());
        k::gated_f16_table(&table, &mut got, &up);
        s::gated_f16_table(&table, &mut want, &up);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "input {:e} ({:#x})",
                x[i],
                x[i].to_bits()
            );
        }
    }

    /// The naive oracle: the first index whose element no other non-NaN element exceeds.
    fn first_max(x: &[f32]) -> Option<usize> {
        let top = x.iter().copied().filter(|v| !v.is_nan()).reduce(f32::max)?;
        x.iter().position(|&v| v == top)
    }

    /// Also `max_non_nan`, over the same cases.
    #[test]
    fn argmax_is_the_first_largest_non_nan_element() {
        let mut rng = Rng::new(41);
        let (nan, inf) = (f32::NAN, f32::INFINITY);
        let mut cases: Vec<Vec<f32>> = vec![
            vec![],
            vec![nan; 9],
            vec![-inf; 6],
            vec![nan, -inf, nan, -inf, -inf],
            vec![-0.0, 0.0, 0.0, -0.0, 0.0],
            vec![1.0, 3.0, 3.0, 2.0, 3.0, 1.0, 3.0, 0.5, 3.0],
            vec![nan, 2.0, nan, 2.0, inf, inf, nan],
            // Every element negative, the largest once, past the first 16 and before the tail.
            (0..41)
                .map(|i| if i == 23 { -0.5 } else { -1.0 - i as f32 })
                .collect(),
            // NaN in the first lanes; the largest twice, first in the last lane of a 16-block.
            (0..35)
                .map(|i| match i {
                    0..4 => nan,
                    15 | 30 => 7.0,
                    _ => 1.0,
                })
                .collect(),
            // The largest, then NaN in its lane and chain (16 on): the NaN must not erase it.
            (0..40)
                .map(|i| match i {
                    0 => 6.0,
                    16 | 32 => nan,
                    _ => 1.0,
                })
                .collect(),
            // Thousands long: a NaN run first, the largest first at 2,100 and again later.
            (0..3000)
                .map(|i| match i {
                    0..1100 => nan,
                    2100 | 2900 => 9.0,
                    _ => (i % 7) as f32 * 0.5 - 10.0,
                })
                .collect(),
        ];
        for n in [1, 3, 4, 5, 8, 15, 16, 17, 31, 63, 257, 4099, 5000] {
            // Few distinct values, so ties across lanes and the tail are common.
            let mut x: Vec<f32> = (0..n).map(|_| (rng.f32() * 6.0).floor()).collect();
            if n > 4 {
                x[n / 3] = nan;
                x[n - 1] = 5.0;
            }
            cases.push(x);
        }
        for x in &cases {
            assert_eq!(k::argmax(x), first_max(x), "{x:?}");
            assert_eq!(s::argmax(x), first_max(x), "scalar {x:?}");
            // The same cases' largest value (`==`: ±0 are one value), −∞ without one.
            let top = first_max(x).map_or(f32::NEG_INFINITY, |i| x[i]);
            assert_eq!(k::max_non_nan(x), top, "{x:?}");
            assert_eq!(s::max_non_nan(x), top, "scalar {x:?}");
        }
    }

    /// Attention's kernels add each term with one multiply-add, rounded once where the build's
    /// `madd` fuses and twice elsewhere: `(1 + 2⁻¹²)² − (1 + 2⁻¹¹)` is 2⁻²⁴ exactly, and 0 with the
    /// product rounded to f32 first (worked out by hand; a tie to even). The scalar twins too,
    /// whose `madd` asks the instruction rather than using it.
    #[test]
    fn multiply_add_kernels_round_as_the_builds_madd() {
        let (x, c) = (1.0 + 2f32.powi(-12), 1.0 + 2f32.powi(-11));
        let want = if k::madd_fuses() { 2f32.powi(-24) } else { 0.0 };
        #[cfg(not(all(target_arch = "wasm32", target_feature = "relaxed-simd")))]
        assert!(!k::madd_fuses(), "only the relaxed-SIMD build may fuse");
        // Element 4 goes to accumulator 0, which holds −c from element 0.
        let mut a = vec![0.0f32; 8];
        let mut b = vec![0.0f32; 8];
        (a[0], b[0], a[4], b[4]) = (-c, 1.0, x, x);
        assert_eq!(k::dot(&a, &b), want, "dot");
        assert_eq!(s::dot(&a, &b), want, "scalar dot");
        assert_eq!(grid([&a[..]; 4], [&b[..]; 2]), [want; 8], "dot_grid");
        let mut y = vec![-c; 4];
        k::axpy_rows([x], [&[x; 4][..]], &mut y);
        assert_eq!(y, [want; 4], "axpy_rows");
        let mut y = vec![-c; 4];
        s::axpy_rows([x], [&[x; 4][..]], &mut y);
        assert_eq!(y, [want; 4], "scalar axpy_rows");
        let (values, weights) = ([1.0, 1.0, 1.0, 1.0, x, x, x, x], [-c, x]);
        let mut out = [0.0f32; 4];
        k::weighted_rows::<1>(&weights, &values, 4, &mut [&mut out[..]], false);
        assert_eq!(out, [want; 4], "weighted_rows");
        s::weighted_rows::<1>(&weights, &values, 4, &mut [&mut out[..]], false);
        assert_eq!(out, [want; 4], "scalar weighted_rows");
    }

    #[test]
    fn f32_kernels_equal_scalar_twins_on_odd_lengths() {
        let mut rng = Rng::new(17);
        for n in [0, 1, 3, 4, 5, 7, 8, 31, 64, 257] {
            let (x, y) = (rng.vec(n, 3.0), rng.vec(n, 3.0));
            assert_eq!(
                k::dot(&x, &y).to_bits(),
                s::dot(&x, &y).to_bits(),
                "dot n={n}"
            );
            assert_eq!(k::max(&x).to_bits(), s::max(&x).to_bits(), "max n={n}");
            let (mut a, mut b) = (y.clone(), y.clone());
            k::axpy(0.37, &x, &mut a);
            s::axpy(0.37, &x, &mut b);
            assert_eq!(a, b, "axpy n={n}");
            for op in [Arith::Add, Arith::Sub, Arith::Mul, Arith::Div] {
                let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
                k::binary(op, &x, &y, &mut a);
                s::binary(op, &x, &y, &mut b);
                assert!(
                    a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{op:?} n={n}"
                );
                k::binary_scalar_rhs(op, &x, 1.5, &mut a);
                s::binary_scalar_rhs(op, &x, 1.5, &mut b);
                assert!(
                    a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()),
                    "{op:?} rhs n={n}"
                );
            }
        }
        let mut with_nan = vec![1.0f32; 9];
        with_nan[6] = f32::NAN;
        assert!(k::max(&with_nan).is_nan() && s::max(&with_nan).is_nan());
    }

    /// |a − b| in units of b's last place (for normal b), or absolute difference / MIN_POSITIVE.
    fn ulps(a: f32, b: f32) -> f32 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0.0;
        }
        let ulp = f32::EPSILON * b.abs().max(f32::MIN_POSITIVE);
        (a - b).abs() / ulp
    }

    #[test]
    fn unary_kernels_within_stated_bounds_of_scalar_twins() {
        use kopitiam_wasm::ops::kernels::Unary;
        let mut xs: Vec<f32> = (-2000..=2000).map(|i| i as f32 * 0.05).collect();
        xs.extend([
            0.0,
            -0.0,
            1e-30,
            -1e-30,
            88.0,
            88.7,
            89.5,
            -87.0,
            -103.0,
            -110.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ]);
        xs.extend(Rng::new(3).vec(1001, 30.0));
        let exact = [
            Unary::Neg,
            Unary::Abs,
            Unary::Relu,
            Unary::Affine(1.5, -0.25),
            Unary::Sqrt,
            Unary::Log,
        ];
        for op in exact {
            let (mut a, mut b) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
            k::unary(op, &xs, &mut a);
            s::unary(op, &xs, &mut b);
            assert!(
                a.iter()
                    .zip(&b)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())),
                "{op:?}"
            );
        }
        // Transcendentals: exp within 3 ulp (normal results); silu/sigmoid inherit it through
        // one add and one divide (≤ 5 ulp); tanh/gelu within 4e-7 absolute (× (1 + |x|)).
        for (op, rel_ulps, abs) in [
            (Unary::Exp, 3.0, 0.0),
            (Unary::Silu, 5.0, 1e-37),
            (Unary::Sigmoid, 5.0, 1e-37),
            (Unary::Tanh, 0.0, 4e-7),
            (Unary::Gelu, 0.0, 4e-7),
        ] {
            let (mut a, mut b) = (vec![0.0; xs.len()], vec![0.0; xs.len()]);
            k::unary(op, &xs, &mut a);
            s::unary(op, &xs, &mut b);
            for ((&x, &p), &q) in xs.iter().zip(&a).zip(&b) {
                let ok = if abs > 0.0 && rel_ulps == 0.0 {
                    (p - q).abs() <= abs * (1.0 + x.abs()) || p == q || (p.is_nan() && q.is_nan())
                } else {
                    q.abs() < f32::MIN_POSITIVE && (p - q).abs() <= f32::MIN_POSITIVE
                        || ulps(p, q) <= rel_ulps
                        || (p - q).abs() <= abs
                };
                assert!(ok, "{op:?}({x}): kernel {p}, libm {q}");
            }
        }
    }

    #[test]
    fn softmax_exp_sum_is_sub_then_unary_exp_and_a_sequential_f64_sum() {
        use kopitiam_wasm::ops::kernels::Unary;
        let mut rng = Rng::new(41);
        for n in [0, 1, 3, 4, 7, 64, 257, 1000] {
            let x = rng.vec(n, 20.0);
            let shift = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            // This build's kernel against its own `sub` + `unary(Exp)` (same bits by contract)…
            let shifted: Vec<f32> = x.iter().map(|&v| v - shift).collect();
            let mut want = vec![0.0; n];
            k::unary(Unary::Exp, &shifted, &mut want);
            let mut got = x.clone();
            let sum = k::exp_sum(&mut got, shift);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(p, q)| p.to_bits() == q.to_bits()),
                "exp_sum values n={n}"
            );
            let seq = want.iter().fold(0.0f64, |a, &v| a + v as f64);
            assert_eq!(sum.to_bits(), seq.to_bits(), "exp_sum total n={n}");
            // … and the scalar twin is libm's exp, within the 3 ulp the vector exp keeps.
            let mut twin = x.clone();
            let twin_sum = s::exp_sum(&mut twin, shift);
            assert!((twin_sum - sum).abs() <= 1e-6 * twin_sum.max(1.0), "n={n}");
        }
    }

    /// `T` heads' softmax by position against each head's row alone through this build's
    /// `max`, `exp_sum` and a multiply by the reciprocal (bit for bit, so attention's weights
    /// do not depend on how many heads went together); a head with a NaN gets NaN weights and
    /// leaves the others alone; the scalar twin does the same with libm's exp.
    #[test]
    fn softmax_by_position_is_each_heads_row_alone() {
        fn check<const T: usize>(rng: &mut Rng) {
            for n in [0, 1, 3, 4, 5, 7, 8, 64, 257, 1000] {
                let mut x = rng.vec(n * T, 20.0);
                if n == 5 && T > 1 {
                    x[2 * T + 1] = f32::NAN;
                }
                let head = |x: &[f32], t: usize| -> Vec<f32> {
                    x.iter().skip(t).step_by(T).copied().collect()
                };
                let mut got = x.clone();
                k::softmax_by_position::<T>(&mut got);
                let mut twin = x.clone();
                s::softmax_by_position::<T>(&mut twin);
                for t in 0..T {
                    let mut want = head(&x, t);
                    let inv = (1.0 / k::exp_sum(&mut want, k::max(&head(&x, t)))) as f32;
                    want.iter_mut().for_each(|v| *v *= inv);
                    let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    let got_t = head(&got, t);
                    let nan = n == 5 && T > 1 && t == 1;
                    let all_nan = !got_t.is_empty() && got_t.iter().all(|v| v.is_nan());
                    assert_eq!(all_nan, nan, "T={T} n={n} head {t}");
                    if !nan {
                        assert_eq!(bits(&got_t), bits(&want), "T={T} n={n} head {t}");
                    }
                    for (a, b) in head(&twin, t).iter().zip(&got_t) {
                        assert!(
                            (a - b).abs() <= 1e-6 || (nan && a.is_nan()),
                            "T={T} n={n}: twin {a}, kernel {b}"
                        );
                    }
                }
            }
        }
        let mut rng = Rng::new(43);
        check::<1>(&mut rng);
        check::<2>(&mut rng);
        check::<4>(&mut rng);
    }

    #[test]
    fn sum_squares_equals_its_twin_and_gives_ggmls_mean() {
        let mut rng = Rng::new(6);
        for n in [0, 1, 3, 4, 5, 7, 8, 9, 64, 640, 2049] {
            let x = rng.vec(n, 50.0);
            let (a, b) = (k::sum_squares(&x), s::sum_squares(&x));
            assert_eq!(a.to_bits(), b.to_bits(), "n={n}: {a} vs {b}");
            // Against ggml's order (one f64 sum in order): the same f32 mean.
            let in_order: f64 = x.iter().map(|&v| (v * v) as f64).sum();
            assert!(
                ((a - in_order) / in_order.max(1e-300)).abs() < 1e-13,
                "n={n}"
            );
            assert_eq!(
                (a / n.max(1) as f64) as f32,
                (in_order / n.max(1) as f64) as f32
            );
        }
    }

    #[test]
    fn dot_is_accurate() {
        // Against an f64 oracle: |err| <= n·eps·Σ|x·y| (a loose, standard bound).
        let mut rng = Rng::new(4);
        let (x, y) = (rng.vec(1001, 1.0), rng.vec(1001, 1.0));
        let want: f64 = x.iter().zip(&y).map(|(&a, &b)| a as f64 * b as f64).sum();
        let mag: f64 = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| (a as f64 * b as f64).abs())
            .sum();
        assert!((s::dot(&x, &y) as f64 - want).abs() <= 1001.0 * f32::EPSILON as f64 * mag);
    }
}
