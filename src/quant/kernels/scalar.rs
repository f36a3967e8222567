//! Scalar kernels: the plain loops every SIMD variant must reproduce.

use crate::dtype::DType;
use crate::quant::act::Q8Act;
use crate::quant::blocks::{read_f16, QK8_0};

/// Bytes of one Q8_0 block.
const QK8_0_BYTES: usize = DType::Q8_0.block_bytes();

pub use crate::quant::kquants::{vec_dot_q4_k_q8_k, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k};
pub use crate::quant::legacy::vec_dot_q5_0_q8_0;
pub use crate::quant::quantize::quantize_row_q8_0;

/// [`quantize_row_q8_0`] that also writes each block's quant sum `Σq` into `sums`.
pub fn quantize_row_q8_0_sums(x: &[f32], out: &mut [u8], sums: &mut [i32]) {
    quantize_row_q8_0(x, out);
    for (sum, ob) in sums.iter_mut().zip(out.chunks_exact(QK8_0_BYTES)) {
        *sum = ob[2..].iter().map(|&q| (q as i8) as i32).sum();
    }
}

/// Adds `scale · isum` of block `b` into lane `b % 4` and reduces the lanes in the canonical order
/// (see the module docs), so SIMD twins can keep one accumulator per lane.
#[inline(always)]
pub(crate) fn accumulate4(blocks: impl Iterator<Item = (f32, i32)>) -> f32 {
    let mut acc = [0.0f32; 4];
    for (b, (scale, isum)) in blocks.enumerate() {
        acc[b % 4] += scale * isum as f32;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// Σ over blocks of `d_w · d_x · Σ (q4 − 8) · q8`: one Q4_0 row against one Q8_0 row.
pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let blocks = w
        .chunks_exact(DType::Q4_0.block_bytes())
        .zip(x.chunks_exact(DType::Q8_0.block_bytes()))
        .map(|(wb, xb)| {
            let qx = &xb[2..];
            let mut isum = 0i32;
            for j in 0..QK8_0 / 2 {
                let lo = (wb[2 + j] & 0x0F) as i32 - 8;
                let hi = (wb[2 + j] >> 4) as i32 - 8;
                isum += lo * (qx[j] as i8) as i32 + hi * (qx[j + QK8_0 / 2] as i8) as i32;
            }
            (read_f16(wb) * read_f16(xb), isum)
        });
    accumulate4(blocks)
}

/// Σ over blocks of `d_w · d_x · Σ q8_w · q8_x`: one Q8_0 row against one Q8_0 row.
pub fn vec_dot_q8_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let blocks = w
        .chunks_exact(DType::Q8_0.block_bytes())
        .zip(x.chunks_exact(DType::Q8_0.block_bytes()))
        .map(|(wb, xb)| {
            let isum: i32 = wb[2..]
                .iter()
                .zip(&xb[2..])
                .map(|(&a, &b)| (a as i8) as i32 * (b as i8) as i32)
                .sum();
            (read_f16(wb) * read_f16(xb), isum)
        });
    accumulate4(blocks)
}

/// Exact `Σ a[i]·b[i]` of two signed-byte slices (quants already unpacked to `i8`; `b` holds
/// Q8 activation bytes). The K-quant and Q5_0 dots run their inner sums through this.
pub fn isum_i8(a: &[i8], b: &[u8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| x as i32 * (y as i8) as i32)
        .sum()
}

/// `out[r·n_w + o] = w_o · x_r` for the first `n_w = out.len() / rows` Q4_0 rows of `w` against
/// every prepared activation row (row-major, so a caller copies whole row segments into place):
/// the reference for the tiled SIMD versions (same bits).
pub fn gemm_q4_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let rows = act.rows().max(1);
    let w_row = act.blocks() * DType::Q4_0.block_bytes();
    let n_w = out.len() / rows;
    for (o, wr) in w.chunks_exact(w_row.max(1)).take(n_w).enumerate() {
        for r in 0..rows {
            out[r * n_w + o] = vec_dot_q4_0_q8_0(wr, act.q8_row(r));
        }
    }
}

/// [`gemm_q4_0_q8_0`] for weights interleaved four rows at a time (`quant::interleave`):
/// `n_w = out.len() / rows` outputs per activation row, from the first `n_w / 4` groups of `w`.
/// Each output is its row's `vec_dot_q4_0_q8_0` (same integers, same order), so the bits are
/// those of the file's layout; the reference for the relaxed-SIMD version.
pub fn gemm_q4_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    use crate::quant::interleave::{group_block, GROUP};
    const GROUP_BLOCK: usize = group_block(DType::Q4_0);
    let (rows, nb) = (act.rows().max(1), act.blocks());
    let n_w = out.len() / rows;
    for (g, wg) in w
        .chunks_exact((nb * GROUP_BLOCK).max(1))
        .take(n_w / GROUP)
        .enumerate()
    {
        for lane in 0..GROUP {
            for r in 0..rows {
                let x = act.q8_row(r);
                let blocks = wg.chunks_exact(GROUP_BLOCK).enumerate().map(|(b, blk)| {
                    let xb = &x[b * QK8_0_BYTES..(b + 1) * QK8_0_BYTES];
                    let mut isum = 0i32;
                    for k in 0..4 {
                        for m in 0..4 {
                            let q = blk[2 * GROUP + 16 * k + 4 * lane + m];
                            let j = 4 * k + m;
                            let (lo, hi) = ((q & 0x0F) as i32 - 8, (q >> 4) as i32 - 8);
                            isum += lo * (xb[2 + j] as i8) as i32
                                + hi * (xb[2 + j + QK8_0 / 2] as i8) as i32;
                        }
                    }
                    (read_f16(&blk[2 * lane..]) * read_f16(xb), isum)
                });
                out[r * n_w + g * GROUP + lane] = accumulate4(blocks);
            }
        }
    }
}

/// A format's scalar dot of one weight row in the file's layout with one activation row.
pub type RowDot = fn(&[u8], &[u8]) -> f32;

/// [`gemm_q4_0x4_q8_0`] for Q5_0 weights interleaved four rows at a time (see
/// [`gemm_x4_by_rows`]); the reference for the relaxed-SIMD version.
pub fn gemm_q5_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let dot = (DType::Q5_0, vec_dot_q5_0_q8_0 as RowDot);
    gemm_x4_by_rows(dot, w, act.blocks(), (act.rows(), |r| act.q8_row(r)), out)
}

/// [`gemm_q4_0x4_q8_0`] for Q8_0 weights interleaved four rows at a time (see
/// [`gemm_x4_by_rows`]); the reference for the relaxed-SIMD version.
pub fn gemm_q8_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let dot = (DType::Q8_0, vec_dot_q8_0_q8_0 as RowDot);
    gemm_x4_by_rows(dot, w, act.blocks(), (act.rows(), |r| act.q8_row(r)), out)
}

/// [`gemm_k_q8_k`] for Q4_K, Q5_K or Q6_K (`dtype`) weights interleaved four rows at a time
/// (see [`gemm_x4_by_rows`]), against the Q8_K activation rows of `x_row` bytes in `x`; the
/// reference for the relaxed-SIMD version. Any other `dtype` writes nothing.
pub fn gemm_kx4_q8_k(dtype: DType, w: &[u8], x: &[u8], x_row: usize, out: &mut [f32]) {
    let dot: RowDot = match dtype {
        DType::Q4_K => vec_dot_q4_k_q8_k,
        DType::Q5_K => vec_dot_q5_k_q8_k,
        DType::Q6_K => vec_dot_q6_k_q8_k,
        _ => return,
    };
    let (nb, rows) = (x_row / DType::Q8_K.block_bytes(), x.len() / x_row.max(1));
    let row = |r: usize| &x[r * x_row..(r + 1) * x_row];
    gemm_x4_by_rows((dtype, dot), w, nb, (rows, row), out)
}

/// An interleaved `dtype` matmul of `nb`-block rows whose groups go back to the file's layout one
/// row at a time and take `dot`, the format's scalar dot, against each of the `rows` activation
/// rows `act(r)` (so the bits are the file layout's by construction): `n_w = out.len() / rows`
/// outputs per activation row, from the first `n_w / 4` groups of `w`.
fn gemm_x4_by_rows<'a>(
    (dtype, dot): (DType, RowDot),
    w: &[u8],
    nb: usize,
    (rows, act): (usize, impl Fn(usize) -> &'a [u8]),
    out: &mut [f32],
) {
    use crate::quant::interleave::{deinterleave_rows, group_block, GROUP};
    let n_w = out.len() / rows.max(1);
    let Ok(mut row) = crate::storage::try_vec(nb * dtype.block_bytes(), 0u8) else {
        return out.fill(f32::NAN);
    };
    let group = (nb * group_block(dtype)).max(1);
    for (g, wg) in w.chunks_exact(group).take(n_w / GROUP).enumerate() {
        for lane in 0..GROUP {
            deinterleave_rows(dtype, wg, nb, lane..lane + 1, &mut row);
            for r in 0..rows {
                out[r * n_w + g * GROUP + lane] = dot(&row, act(r));
            }
        }
    }
}

/// `out[r·n_w + o] = w_o · x_r` for the first `n_w = out.len() / rows` Q8_0 rows of `w` (the
/// reference for the tiled SIMD version, same bits).
pub fn gemm_q8_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let rows = act.rows().max(1);
    let w_row = act.blocks() * DType::Q8_0.block_bytes();
    let n_w = out.len() / rows;
    for (o, wr) in w.chunks_exact(w_row.max(1)).take(n_w).enumerate() {
        for r in 0..rows {
            out[r * n_w + o] = vec_dot_q8_0_q8_0(wr, act.q8_row(r));
        }
    }
}

/// `out[r·n_w + o] = w_o · x_r` for Q4_K, Q5_K or Q6_K (`dtype`) weight rows against `rows`
/// Q8_K activation rows of `x_row` bytes: the reference for the four-row SIMD tiles (same
/// bits). Any other `dtype` writes nothing.
pub fn gemm_k_q8_k(dtype: DType, w: &[u8], x: &[u8], x_row: usize, out: &mut [f32]) {
    let dot = match dtype {
        DType::Q4_K => vec_dot_q4_k_q8_k,
        DType::Q5_K => vec_dot_q5_k_q8_k,
        DType::Q6_K => vec_dot_q6_k_q8_k,
        _ => return,
    };
    k_rows_one_by_one(dot, dtype.block_bytes(), w, x, x_row, out);
}

/// `out[r·n_w + o] = dot(w_o, x_r)` for K-format weight rows of `wb_len`-byte super-blocks, one
/// pair at a time (the SIMD tiles use it for the rows outside their fours).
pub(crate) fn k_rows_one_by_one(
    dot: fn(&[u8], &[u8]) -> f32,
    wb_len: usize,
    w: &[u8],
    x: &[u8],
    x_row: usize,
    out: &mut [f32],
) {
    let rows = x.len() / x_row.max(1);
    if rows == 0 {
        return;
    }
    let n_w = out.len() / rows;
    let w_row = (x_row / DType::Q8_K.block_bytes()) * wb_len;
    for (o, wr) in w.chunks_exact(w_row.max(1)).take(n_w).enumerate() {
        for r in 0..rows {
            out[r * n_w + o] = dot(wr, &x[r * x_row..(r + 1) * x_row]);
        }
    }
}

/// `out[r·n + o] = Σ_j w_o[j] · x_r[j]` for the `m = x.len() / k` activation rows of `x`
/// against `n = out.len() / m` weight rows of `w`, each `w_row ≥ k` bytes apart (Tesseract's
/// matrices carry their bias after the `k` weights). Exact i32 sums: the reference for the
/// tiled SIMD versions, which must return the same integers.
pub fn gemm_i8(x: &[i8], k: usize, w: &[i8], w_row: usize, out: &mut [i32]) {
    if k == 0 {
        // Every sum is empty (the row count is not even known).
        out.fill(0);
        return;
    }
    let m = x.len() / k;
    let n = out.len() / m.max(1);
    for (r, xr) in x.chunks_exact(k).take(m).enumerate() {
        for o in 0..n {
            let wr = &w[o * w_row..o * w_row + k];
            out[r * n + o] = wr.iter().zip(xr).map(|(&a, &b)| a as i32 * b as i32).sum();
        }
    }
}
