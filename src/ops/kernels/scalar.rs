//! Scalar twins of the f32 kernels.

use super::{madd, Arith, Unary};

/// `y[i] += a * x[i]`.
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// `out[r·step + h] = dot(xs[h], ys[r])`: every query head `h` against every key row `r`
/// (attention's scores), each with `dot`'s bits, written where the caller keeps row `r`'s
/// scores (`step` apart). A row whose `H` places `out` does not hold is left out.
pub fn dot_grid<const H: usize, const R: usize>(
    xs: [&[f32]; H],
    ys: [&[f32]; R],
    out: &mut [f32],
    step: usize,
) {
    for (r, y) in ys.iter().enumerate() {
        let Some(row) = super::grid_row(out, r, step, H) else {
            continue;
        };
        for (o, x) in row.iter_mut().zip(xs) {
            *o = dot(x, y);
        }
    }
}

/// `y[i] = madd(a[k], xs[k][i], y[i])` for `k = 0, 1, … N − 1` in turn: attention's rows of
/// values weighed into `y` (each element takes the `N` terms in order).
pub fn axpy_rows<const N: usize>(a: [f32; N], xs: [&[f32]; N], y: &mut [f32]) {
    for (a, x) in a.iter().zip(xs) {
        for (y, &x) in y.iter_mut().zip(x) {
            *y = madd(*a, x, *y);
        }
    }
}

/// `ys[t] = Σ_j a[T·j + t] · x[j·stride..][..w]` for the `T` outputs `t` (each `w` wide), from
/// zero, the terms in `j` order: attention's `T` heads of one KV head weighing its value rows,
/// `a` their weights by position. Each output has the bits of `axpy_rows` calls in `j` order.
/// A row that `x` ends inside adds the elements it has, and rows past its end nothing.
/// `prefetch` asks the SIMD version to [`touch`](super::touch) rows ahead; it changes no bits.
pub fn weighted_rows<const T: usize>(
    a: &[f32],
    x: &[f32],
    stride: usize,
    ys: &mut [&mut [f32]; T],
    _prefetch: bool,
) {
    for (t, y) in ys.iter_mut().enumerate() {
        y.fill(0.0);
        for (j, a) in a.chunks_exact(T).enumerate() {
            let Some(row) = j.checked_mul(stride).and_then(|at| x.get(at..)) else {
                break;
            };
            axpy_rows([a[t]], [row], y);
        }
    }
}

/// `x[i]` rounded to the nearest f16 (ties to even) and back to f32, as `half` converts: what
/// llama.cpp's f16 KV cache holds.
pub fn round_to_f16(x: &mut [f32]) {
    for v in x {
        *v = half::f16::from_f32(*v).to_f32();
    }
}

/// `gate[i] = g(gate[i]) · up[i]` where `g` is a function known through its f16 table (`table[h]`
/// the f16 bits of `g(f16 h)`, all 65,536 of them) inside (-10, 10), `0` at or below -10 and the
/// identity at or above 10: GELU as ggml's CPU backend computes it.
pub fn gated_f16_table(table: &[u16; 65536], gate: &mut [f32], up: &[f32]) {
    use crate::quant::{f16_to_f32, f32_to_f16_finite};
    for (g, &u) in gate.iter_mut().zip(up) {
        let a = if *g <= -10.0 {
            0.0
        } else if *g >= 10.0 {
            *g
        } else {
            f16_to_f32(table[f32_to_f16_finite(*g) as usize])
        };
        *g = a * u;
    }
}

/// Σ x[i]·y[i] in the shared four-accumulator order, each term added by [`madd`].
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let mut acc = [0.0f32; 4];
    let body = n / 4 * 4;
    for i in 0..body {
        acc[i % 4] = madd(x[i], y[i], acc[i % 4]);
    }
    for (lane, i) in (body..n).enumerate() {
        acc[lane] = madd(x[i], y[i], acc[lane]);
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// `out[i] = op(a[i], b[i])`.
pub fn binary(op: Arith, a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o = op.apply(a, b);
    }
}

/// `out[i] = op(a[i], b)` (the right operand broadcast along the row).
pub fn binary_scalar_rhs(op: Arith, a: &[f32], b: f32, out: &mut [f32]) {
    for (o, &a) in out.iter_mut().zip(a) {
        *o = op.apply(a, b);
    }
}

/// Largest element, NaN if any element is NaN, `-inf` for an empty slice.
pub fn max(x: &[f32]) -> f32 {
    let mut m = f32::NEG_INFINITY;
    for &v in x {
        if v.is_nan() {
            return f32::NAN;
        }
        m = m.max(v);
    }
    m
}

/// Largest non-NaN element, `-inf` when there is none: what a block must exceed to hold
/// anything above a bar (the sampler's top-k skips blocks by it).
pub fn max_non_nan(x: &[f32]) -> f32 {
    // NaN compares false, so it never replaces the running maximum.
    x.iter()
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m })
}

/// Index of the first largest element, NaN skipped; `None` when every element is NaN (or there
/// are none). Greedy sampling's pick.
pub fn argmax(x: &[f32]) -> Option<usize> {
    let first = x.iter().position(|v| !v.is_nan())?;
    let mut best = first;
    for (i, &v) in x.iter().enumerate().skip(first + 1) {
        // NaN compares false, so it never replaces the best.
        if v > x[best] {
            best = i;
        }
    }
    Some(best)
}

/// `out[i] = op(x[i])` with the platform's libm (`f32::exp`, `f32::tanh`).
pub fn unary(op: Unary, x: &[f32], out: &mut [f32]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = op.apply(v);
    }
}

/// `y[i] = exp(y[i] - shift)` in place, returning Σ y[i] added sequentially in f64: softmax's
/// middle step (`shift` the row's max), in one pass over the row.
pub fn exp_sum(y: &mut [f32], shift: f32) -> f64 {
    let mut sum = 0.0f64;
    for v in y.iter_mut() {
        *v = (*v - shift).exp();
        sum += *v as f64;
    }
    sum
}

/// Softmax in place of `T` heads' rows stored by position (`x[j·T + t]` is head `t`'s score at
/// position `j`; a tail shorter than `T` is left alone): each head's row gets what it would get
/// alone, `max`, `exp_sum` and a multiply by `(1 / Σ) as f32`. Attention's scores come by
/// position (one key row serves `T` heads), and its weighted values read them so.
pub fn softmax_by_position<const T: usize>(x: &mut [f32]) {
    const { assert!(T > 0) };
    let whole = x.len() / T * T;
    let x = &mut x[..whole];
    for t in 0..T {
        let mut shift = f32::NEG_INFINITY;
        for &v in x.iter().skip(t).step_by(T) {
            shift = super::nan_max(shift, v);
        }
        let mut sum = 0.0f64;
        for v in x.iter_mut().skip(t).step_by(T) {
            *v = (*v - shift).exp();
            sum += *v as f64;
        }
        let inv = (1.0 / sum) as f32;
        x.iter_mut().skip(t).step_by(T).for_each(|v| *v *= inv);
    }
}

/// Σ x[i]² in f64, each square rounded to f32 first (as ggml's RMSNorm does; ggml then adds them
/// in order, we in eight lanes so that the vector kernel has chains to overlap — the order
/// changes the f64 sum by ulps far below an f32 ulp of the mean): element `i` of the whole
/// eights into lane `i % 8`, the lanes added as `((l0 + l2) + (l4 + l6)) + ((l1 + l3) + (l5 +
/// l7))`, then the rest in order.
pub fn sum_squares(x: &[f32]) -> f64 {
    let body = x.len() / 8 * 8;
    let mut l = [0.0f64; 8];
    for (i, &v) in x[..body].iter().enumerate() {
        l[i % 8] += (v * v) as f64;
    }
    let mut sum = ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
    for &v in &x[body..] {
        sum += (v * v) as f64;
    }
    sum
}
