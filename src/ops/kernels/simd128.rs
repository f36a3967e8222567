//! wasm32 SIMD128 f32 kernels; bit-identical to `scalar.rs` (see the module docs).

use core::arch::wasm32::*;

use super::{madd, nan_max, Arith, Unary};
use crate::quant::kernels::simd128::{f16_constants, f32_lanes, i32_lanes};

#[inline(always)]
fn load(x: &[f32]) -> v128 {
    assert!(x.len() >= 4);
    // SAFETY: four readable f32s checked above; unaligned loads are allowed.
    unsafe { v128_load(x.as_ptr() as *const v128) }
}

#[inline(always)]
fn store(y: &mut [f32], v: v128) {
    assert!(y.len() >= 4);
    // SAFETY: four writable f32s checked above; unaligned stores are allowed.
    unsafe { v128_store(y.as_mut_ptr() as *mut v128, v) }
}

/// `a · b + c` in four lanes: [`madd`]'s vector form.
#[inline(always)]
fn madd4(a: v128, b: v128, c: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    return f32x4_relaxed_madd(a, b, c);
    #[cfg(not(target_feature = "relaxed-simd"))]
    f32x4_add(f32x4_mul(a, b), c)
}

/// Lanes 2 and 3 of `v` (f32) as an f64x2: `f64x2_promote_low_f32x4`'s other half.
#[inline(always)]
fn promote_high(v: v128) -> v128 {
    f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 0, 1>(v, v))
}

/// Four f32s at `x + i`, unchecked: for loops that check every slice's length once up front
/// (with [`load`], a check per load stayed in LLVM's loop).
///
/// # Safety
/// `i + 4 <= len` of the slice `x` points into.
#[inline(always)]
unsafe fn load_at(x: *const f32, i: usize) -> v128 {
    v128_load(x.add(i) as *const v128)
}

/// [`load_at`]'s store.
///
/// # Safety
/// As [`load_at`], for a writable slice.
#[inline(always)]
unsafe fn store_at(y: *mut f32, i: usize, v: v128) {
    v128_store(y.add(i) as *mut v128, v)
}

/// Runs `step(i)` for `i = 0, 4, … < body` (a multiple of 4), four steps per iteration, for
/// loops whose step uses many vector constants (`gated_f16_table`, `softmax_by_position`; see
/// the former for what four steps gained). Their constants are made once a call and passed in
/// ([`F16Consts`], [`ExpConsts`]): V8 14.6's optimising tier builds a `v128.const` afresh at
/// every use inside a loop, however many steps an iteration takes.
#[inline(always)]
fn by_four_chunks(body: usize, mut step: impl FnMut(usize)) {
    let mut i = 0;
    while i + 16 <= body {
        (0..4).for_each(|s| step(i + 4 * s));
        i += 16;
    }
    for i in (i..body).step_by(4) {
        step(i);
    }
}

/// Runs `step(i)` for `i = 0, 4, … < body` (a multiple of 4), two steps per iteration. LLVM
/// leaves these loops rolled, and in V8's code each iteration's index arithmetic, bounds checks,
/// branch and loop interrupt check were as many instructions as a step's arithmetic. Measured
/// in Chromium on four heads' scores over 512 key rows: 0.050 → 0.036 ms; four steps an
/// iteration ran slower than two. (`dot_grid`'s grids of eight chains have since gone back to one
/// step an iteration: with two, V8 spilled their accumulators.)
#[inline(always)]
fn by_two_chunks(body: usize, mut step: impl FnMut(usize)) {
    let mut i = 0;
    while i + 8 <= body {
        step(i);
        step(i + 4);
        i += 8;
    }
    if i < body {
        step(i);
    }
}

pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let av = f32x4_splat(a);
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        let v = f32x4_add(load(&y[i..]), f32x4_mul(av, load(&x[i..])));
        store(&mut y[i..], v);
    }
    for i in body..n {
        y[i] += a * x[i];
    }
}

/// See `scalar::axpy_rows`: per four elements `y` is loaded once, takes the `N` terms in order,
/// and is stored once.
pub fn axpy_rows<const N: usize>(a: [f32; N], xs: [&[f32]; N], y: &mut [f32]) {
    let n = y.len();
    if xs.iter().any(|x| x.len() != n) {
        return super::scalar::axpy_rows(a, xs, y);
    }
    let av = a.map(|v| f32x4_splat(v));
    let body = n / 4 * 4;
    let (xp, yp) = (xs.map(|x| x.as_ptr()), y.as_mut_ptr());
    // SAFETY: every `i + 4 <= body <= n`, the length of `y` and of each `xs` (checked above).
    by_two_chunks(body, |i| unsafe {
        let mut t = load_at(yp, i);
        for k in 0..N {
            t = madd4(av[k], load_at(xp[k], i), t);
        }
        store_at(yp, i, t);
    });
    for i in body..n {
        for k in 0..N {
            y[i] = madd(a[k], xs[k][i], y[i]);
        }
    }
}

/// See `scalar::weighted_rows` (same bits): two vectors of each of the `T` outputs stay in
/// registers over every row, so each row's eight elements are loaded once for the `T` heads
/// and the outputs are written once. (Four rows at a time into outputs in memory, as before,
/// loaded and stored the outputs for every four rows: 0.040 → 0.037 ms over 512 rows.) With
/// `prefetch`, the first pass over the rows [`touch`](super::touch)es the `w` elements of the
/// row [`TOUCH_AHEAD`](super::TOUCH_AHEAD) ahead, so the later passes find them cached.
pub fn weighted_rows<const T: usize>(
    a: &[f32],
    x: &[f32],
    stride: usize,
    ys: &mut [&mut [f32]; T],
    prefetch: bool,
) {
    let w = ys.first().map_or(0, |y| y.len());
    let end = (a.len() / T.max(1))
        .checked_sub(1)
        .map_or(Some(0), |last| last.checked_mul(stride)?.checked_add(w));
    if T == 0 || ys.iter().any(|y| y.len() != w) || end.is_none_or(|end| end > x.len()) {
        return super::scalar::weighted_rows(a, x, stride, ys, prefetch);
    }
    let n = a.len() / T;
    let touch_ahead = |j: usize| {
        let at = (j + super::TOUCH_AHEAD < n).then(|| (j + super::TOUCH_AHEAD) * stride);
        super::touch(at.and_then(|at| x.get(at..at + w)).unwrap_or_default());
    };
    let yp: [*mut f32; T] = core::array::from_fn(|t| ys[t].as_mut_ptr());
    let mut e = 0;
    // SAFETY: row `j`'s elements `e..e + 8` (or `+ 4`) end at `j·stride + w` at most, within
    // `x` (checked above), and each output has `w` elements.
    unsafe {
        while e + 8 <= w {
            let sums = if e == 0 && prefetch {
                rows_times_weights::<T, 2>(a, x.as_ptr(), stride, touch_ahead)
            } else {
                rows_times_weights::<T, 2>(a, x.as_ptr().add(e), stride, |_| {})
            };
            for (t, s) in sums.iter().enumerate() {
                store_at(yp[t], e, s[0]);
                store_at(yp[t], e + 4, s[1]);
            }
            e += 8;
        }
        if e + 4 <= w {
            let sums = rows_times_weights::<T, 1>(a, x.as_ptr().add(e), stride, |_| {});
            for (t, s) in sums.iter().enumerate() {
                store_at(yp[t], e, s[0]);
            }
            e += 4;
        }
    }
    for (t, y) in ys.iter_mut().enumerate() {
        y[e..].fill(0.0);
        for (j, a) in a.chunks_exact(T).enumerate() {
            for (y, &x) in y[e..].iter_mut().zip(&x[j * stride + e..]) {
                *y = madd(a[t], x, *y);
            }
        }
    }
}

/// `Σ_j a[T·j + t] · x[j·stride..][..4·C]` for the `T` outputs `t`, as `C` vectors each,
/// calling `before_row(j)` before row `j`.
///
/// # Safety
/// `x + j·stride` must have `4·C` readable f32s for every `j < a.len() / T`.
#[inline(always)]
unsafe fn rows_times_weights<const T: usize, const C: usize>(
    a: &[f32],
    x: *const f32,
    stride: usize,
    before_row: impl Fn(usize),
) -> [[v128; C]; T] {
    let mut acc = [[f32x4_splat(0.0); C]; T];
    let mut row = x;
    for (j, a) in a.chunks_exact(T).enumerate() {
        before_row(j);
        let xv: [v128; C] = core::array::from_fn(|c| load_at(row, 4 * c));
        for (t, acc) in acc.iter_mut().enumerate() {
            let at = f32x4_splat(a[t]);
            for c in 0..C {
                acc[c] = madd4(at, xv[c], acc[c]);
            }
        }
        row = row.wrapping_add(stride);
    }
    acc
}

/// See `scalar::gated_f16_table` (same bits): four lanes at a time go to f16 with
/// `quant::f32_to_f16_finite`'s two paths (a select between them) and back from the table with
/// `quant::f16_to_f32`'s, only the four table reads being scalar. Four vectors an iteration
/// ([`by_four_chunks`]; in Chromium on 2,048 elements: 2.65 → 1.84 ns an element, two vectors
/// 2.08).
pub fn gated_f16_table(table: &[u16; 65536], gate: &mut [f32], up: &[f32]) {
    let n = gate.len().min(up.len());
    let body = n / 4 * 4;
    let (g, u) = (gate.as_mut_ptr(), up.as_ptr());
    let c = F16Consts::new();
    // SAFETY: every step reads and writes elements `i..i + 4` with `i + 4 <= body <= n`, the
    // length of both `gate` and `up` at least.
    by_four_chunks(body, |i| unsafe { gated_step(table, g, u, i, &c) });
    super::scalar::gated_f16_table(table, &mut gate[body..n], &up[body..n]);
}

/// Elements `i..i + 4` of [`gated_f16_table`].
///
/// # Safety
/// `g` and `u` must have four readable (and in `g` writable) f32s from `i`.
#[inline(always)]
unsafe fn gated_step(table: &[u16; 65536], g: *mut f32, u: *const f32, i: usize, c: &F16Consts) {
    let x = load_at(g, i);
    let h = f32_to_f16_finite4(x, c);
    let look = i32_lanes(h).map(|h| u32::from(table[(h & 0xFFFF) as usize]));
    let v = f16_to_f32_4(u32x4(look[0], look[1], look[2], look[3]), c);
    let v = v128_bitselect(x, v, f32x4_ge(x, c.ten));
    let v = v128_andnot(v, f32x4_le(x, c.minus_ten));
    store_at(g, i, f32x4_mul(v, load_at(u, i)));
}

/// See `scalar::round_to_f16` (same bits): four lanes to f16 and back with the GELU path's
/// conversions; a vector with a lane the finite path does not cover (|x| ≥ 65,520, whose f16 is
/// inf, or inf/NaN) goes through the twin.
pub fn round_to_f16(x: &mut [f32]) {
    let body = x.len() / 4 * 4;
    let c = F16Consts::new();
    for i in (0..body).step_by(4) {
        let v = load(&x[i..]);
        if v128_any_true(u32x4_ge(v128_and(v, c.magnitude), c.finite_limit)) {
            super::scalar::round_to_f16(&mut x[i..i + 4]);
        } else {
            store(&mut x[i..], f16_to_f32_4(f32_to_f16_finite4(v, &c), &c));
        }
    }
    super::scalar::round_to_f16(&mut x[body..]);
}

/// The constants of [`f32_to_f16_finite4`], [`f16_to_f32_4`] and [`gated_f16_table`]'s
/// saturation, made once a call: V8's optimising tier builds a `v128.const` afresh at each use
/// in a loop, three x86 instructions each: the GELU table's loop went from 440 to 281
/// instructions for four steps with these (V8 14.6, `--print-wasm-code`). Through `black_box`
/// they are values it keeps in registers or reloads from the stack. Gemma 3 270M's activation
/// section, one thread in Chromium: 0.073–0.075 → 0.064–0.071 ms a prompt token (three rounds).
#[derive(Clone, Copy)]
struct F16Consts {
    /// `f32_to_f16_finite`'s: the sign bit and the magnitude of an f32; 0.5 and its bits (the
    /// subnormal path); one, the rounding bias 0x0FFF and the exponent rebias 112 << 23; the
    /// smallest normal f16 as f32 bits; the low half.
    sign: v128,
    magnitude: v128,
    half: v128,
    half_bits: v128,
    one: v128,
    bias: v128,
    rebias: v128,
    min_normal: v128,
    low16: v128,
    /// `f16_to_f32`'s: the f16 magnitude, 2^112, the exponent, f32's exponent, the mantissa.
    f16_magnitude: v128,
    scale: v128,
    f16_exp: v128,
    f32_exp: v128,
    mantissa: v128,
    /// The GELU table's saturation points.
    ten: v128,
    minus_ten: v128,
    /// 65,520 as f32 bits: from there a magnitude's f16 is inf (`round_to_f16`'s twin path).
    finite_limit: v128,
}

impl F16Consts {
    #[inline(always)]
    fn new() -> Self {
        core::hint::black_box(F16Consts {
            sign: u32x4_splat(0x8000),
            magnitude: u32x4_splat(0x7FFF_FFFF),
            half: f32x4_splat(0.5),
            half_bits: u32x4_splat(0x3F00_0000),
            one: u32x4_splat(1),
            bias: u32x4_splat(0x0FFF),
            rebias: u32x4_splat(112 << 23),
            min_normal: u32x4_splat(0x3880_0000),
            low16: u32x4_splat(0xFFFF),
            f16_magnitude: u32x4_splat(0x7FFF),
            scale: f16_constants().1,
            f16_exp: u32x4_splat(0x7C00),
            f32_exp: u32x4_splat(0x7F80_0000),
            mantissa: u32x4_splat(0x03FF),
            ten: f32x4_splat(10.0),
            minus_ten: f32x4_splat(-10.0),
            finite_limit: u32x4_splat(0x477F_F000),
        })
    }
}

/// `quant::f32_to_f16_finite` on four lanes (the f16 bits in each lane's low half).
#[inline(always)]
fn f32_to_f16_finite4(x: v128, c: &F16Consts) -> v128 {
    let sign = v128_and(u32x4_shr(x, 16), c.sign);
    let a = v128_and(x, c.magnitude);
    let sub = i32x4_sub(f32x4_add(a, c.half), c.half_bits);
    let odd = v128_and(u32x4_shr(a, 13), c.one);
    let norm = i32x4_add(a, i32x4_add(odd, c.bias));
    let norm = u32x4_shr(i32x4_sub(norm, c.rebias), 13);
    let h = v128_bitselect(sub, norm, u32x4_lt(a, c.min_normal));
    v128_or(v128_and(h, c.low16), sign)
}

/// `quant::f16_to_f32` on four lanes of f16 bits.
#[inline(always)]
fn f16_to_f32_4(h: v128, c: &F16Consts) -> v128 {
    let magnitude = f32x4_mul(u32x4_shl(v128_and(h, c.f16_magnitude), 13), c.scale);
    let special = i32x4_eq(v128_and(h, c.f16_exp), c.f16_exp);
    let inf_nan = v128_or(c.f32_exp, u32x4_shl(v128_and(h, c.mantissa), 13));
    let bits = v128_bitselect(inf_nan, magnitude, special);
    v128_or(bits, u32x4_shl(v128_and(h, c.sign), 16))
}

/// See `scalar::dot_grid`: one accumulator chain per (head, row) pair, each `dot`'s, so the bits
/// are too. A lone chain waits on its add's latency every step; `H · R` chains (eight for four
/// heads and two rows) overlap, and each `xs` load serves every row, each `ys` load every head.
/// Eight chains or more take one step an iteration: two (as the smaller grids keep) left V8 no
/// register for the second step's vectors, and it spilled the accumulators (Chromium, four heads'
/// scores over 512 key rows in the L2: 0.035–0.043 → 0.028–0.030 ms; two heads by four rows
/// 0.019–0.023 → 0.013–0.018).
///
/// Four heads' sums of a row end in one vector ([`four_sums`]) stored where the row's scores go.
/// Returned as an array instead, the sums went through the stack, whose 8- and 16-byte reloads of
/// 4-byte stores wait for the stores to retire: a sixth of the function's time in a 1,060-token
/// prompt (`perf` over V8's code in node). A row whose places `out` does not hold is left out,
/// as in the twin.
pub fn dot_grid<const H: usize, const R: usize>(
    xs: [&[f32]; H],
    ys: [&[f32]; R],
    out: &mut [f32],
    step: usize,
) {
    let n = xs.first().map_or(0, |x| x.len());
    if xs.iter().any(|x| x.len() != n) || ys.iter().any(|y| y.len() != n) {
        return super::scalar::dot_grid(xs, ys, out, step);
    }
    let body = n / 4 * 4;
    let mut acc = [[f32x4_splat(0.0); H]; R];
    let (xp, yp) = (xs.map(|x| x.as_ptr()), ys.map(|y| y.as_ptr()));
    // SAFETY: every `i + 4 <= body <= n`, the length of each `xs` and `ys` (checked above).
    let step_at = |i: usize| unsafe {
        let yv = yp.map(|y| load_at(y, i));
        for h in 0..H {
            let x = load_at(xp[h], i);
            for r in 0..R {
                acc[r][h] = madd4(x, yv[r], acc[r][h]);
            }
        }
    };
    if H * R >= 8 {
        (0..body).step_by(4).for_each(step_at);
    } else {
        by_two_chunks(body, step_at);
    }
    for (r, (acc, y)) in acc.iter().zip(ys).enumerate() {
        let Some(out) = super::grid_row(out, r, step, H) else {
            continue;
        };
        match <&[v128; 4]>::try_from(&acc[..]) {
            Ok(&four) if body == n => store(out, four_sums(four)),
            _ => {
                for ((o, a), x) in out.iter_mut().zip(acc).zip(xs) {
                    *o = finish_dot(*a, x, y, body);
                }
            }
        }
    }
}

/// [`finish_dot`] of four accumulators without tails, lane `h` of the result `a[h]`'s: the same
/// `(lane0 + lane1) + (lane2 + lane3)`, paired by shuffles.
#[inline(always)]
fn four_sums(a: [v128; 4]) -> v128 {
    // [x0 + x1, x2 + x3, y0 + y1, y2 + y3]
    let pairs = |x: v128, y: v128| {
        f32x4_add(
            i32x4_shuffle::<0, 2, 4, 6>(x, y),
            i32x4_shuffle::<1, 3, 5, 7>(x, y),
        )
    };
    pairs(pairs(a[0], a[1]), pairs(a[2], a[3]))
}

pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let body = n / 4 * 4;
    let mut acc = f32x4_splat(0.0);
    for i in (0..body).step_by(4) {
        acc = madd4(load(&x[i..]), load(&y[i..]), acc);
    }
    finish_dot(acc, &x[..n], &y[..n], body)
}

/// A dot product's end in the shared order: the tail from `body` into lanes 0.., then
/// `(acc0 + acc1) + (acc2 + acc3)`.
#[inline(always)]
fn finish_dot(acc: v128, x: &[f32], y: &[f32], body: usize) -> f32 {
    let mut lanes = f32_lanes(acc);
    for (lane, i) in (body..x.len()).enumerate() {
        lanes[lane] = madd(x[i], y[i], lanes[lane]);
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

#[inline(always)]
fn apply4(op: Arith, a: v128, b: v128) -> v128 {
    match op {
        Arith::Add => f32x4_add(a, b),
        Arith::Sub => f32x4_sub(a, b),
        Arith::Mul => f32x4_mul(a, b),
        Arith::Div => f32x4_div(a, b),
    }
}

pub fn binary(op: Arith, a: &[f32], b: &[f32], out: &mut [f32]) {
    let n = out.len().min(a.len()).min(b.len());
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        store(&mut out[i..], apply4(op, load(&a[i..]), load(&b[i..])));
    }
    for i in body..n {
        out[i] = op.apply(a[i], b[i]);
    }
}

pub fn binary_scalar_rhs(op: Arith, a: &[f32], b: f32, out: &mut [f32]) {
    let n = out.len().min(a.len());
    let bv = f32x4_splat(b);
    let body = n / 4 * 4;
    for i in (0..body).step_by(4) {
        store(&mut out[i..], apply4(op, load(&a[i..]), bv));
    }
    for i in body..n {
        out[i] = op.apply(a[i], b);
    }
}

pub fn max(x: &[f32]) -> f32 {
    let body = x.len() / 4 * 4;
    let mut m = f32x4_splat(f32::NEG_INFINITY);
    let mut nan = i32x4_splat(0);
    for i in (0..body).step_by(4) {
        let v = load(&x[i..]);
        nan = v128_or(nan, f32x4_ne(v, v));
        m = f32x4_pmax(m, v);
    }
    if v128_any_true(nan) {
        return f32::NAN;
    }
    let mut r = f32x4_extract_lane::<0>(m)
        .max(f32x4_extract_lane::<1>(m))
        .max(f32x4_extract_lane::<2>(m))
        .max(f32x4_extract_lane::<3>(m));
    for &v in &x[body..] {
        if v.is_nan() {
            return f32::NAN;
        }
        r = r.max(v);
    }
    r
}

/// Elements [`argmax`] takes the largest of at once: only the first block holding the row's
/// largest is read a second time, a few KB still in the core's cache.
const ARGMAX_BLOCK: usize = 1024;

/// See `scalar::argmax` (same index). The largest non-NaN element of each block of
/// [`ARGMAX_BLOCK`] ([`max_non_nan`]), then the first element equal to the largest in the first
/// block that holds it: the scalar twin's pick, since it keeps the first of equal maxima and NaN
/// equals nothing. One pass carrying each lane's index (a compare and two selects a vector) took
/// 0.15–0.2 ms over Gemma 3's 262,144 logits a token, this 0.11, about what reading the logits
/// back costs once the LM head's weights have pushed them out of the core's cache (section
/// profile). A slice with nothing above −∞ (all NaN or −∞) goes to the scalar twin, whose
/// first-non-NaN start decides it.
pub fn argmax(x: &[f32]) -> Option<usize> {
    let mut top = f32::NEG_INFINITY;
    let mut at = 0..0;
    for start in (0..x.len()).step_by(ARGMAX_BLOCK) {
        let block = start..(start + ARGMAX_BLOCK).min(x.len());
        let m = max_non_nan(&x[block.clone()]);
        if m > top {
            (top, at) = (m, block);
        }
    }
    if top == f32::NEG_INFINITY {
        return super::scalar::argmax(x);
    }
    x[at.clone()]
        .iter()
        .position(|&v| v == top)
        .map(|j| at.start + j)
}

/// See `scalar::max_non_nan`: an equal value (a zero's sign may differ), since the order in
/// which the lanes meet only decides between equal elements.
pub fn max_non_nan(x: &[f32]) -> f32 {
    let body = x.len() / 16 * 16;
    let none = f32x4_splat(f32::NEG_INFINITY);
    // Four chains, so no step waits on the one before.
    let mut acc = [none; 4];
    for i in (0..body).step_by(16) {
        for (c, a) in acc.iter_mut().enumerate() {
            let v = load(&x[i + 4 * c..]);
            // NaN made −∞ first: with `+relaxed-simd` LLVM turns `pmax` into a relaxed max,
            // which here returned the NaN and so lost the lane's largest (kernel test).
            *a = f32x4_pmax(*a, v128_bitselect(v, none, f32x4_eq(v, v)));
        }
    }
    let lanes = acc.into_iter().flat_map(f32_lanes);
    lanes
        .chain(x[body..].iter().copied())
        .fold(f32::NEG_INFINITY, |m, v| if v > m { v } else { m })
}

/// [`exp4`]'s constants, made once a call and passed in, for the reason [`F16Consts`] gives:
/// the clamp, log2 e, ln 2 in two parts, the polynomial's eight coefficients (highest first) and
/// the exponent bias. `softmax_by_position`'s loop went from 407 to 256 instructions with them
/// (V8 14.6, `--print-wasm-code`); a long prompt's attention, where it runs, moved within the
/// noise.
#[derive(Clone, Copy)]
struct ExpConsts {
    lo: v128,
    hi: v128,
    log2_e: v128,
    ln2_hi: v128,
    ln2_lo: v128,
    poly: [v128; 8],
    bias: v128,
}

impl ExpConsts {
    #[inline(always)]
    fn new() -> Self {
        let poly = [
            1.0 / 5040.0,
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
            1.0,
            1.0,
        ];
        core::hint::black_box(ExpConsts {
            lo: f32x4_splat(-104.0),
            hi: f32x4_splat(89.0),
            log2_e: f32x4_splat(core::f32::consts::LOG2_E),
            ln2_hi: f32x4_splat(0.693_145_75),
            ln2_lo: f32x4_splat(1.428_606_8e-6),
            poly: poly.map(|a: f32| f32x4_splat(a)),
            bias: i32x4_splat(127),
        })
    }
}

/// e^x for four lanes: Cody–Waite reduction `x = k·ln2 + r` (|r| ≤ ln2/2, ln2 split in two so
/// `r` is exact to ~2^-32), a degree-7 Taylor polynomial for e^r (truncation < 2^-27), then
/// scaling by 2^k through the exponent bits in two steps so no intermediate overflows.
/// Saturates to 0 / inf outside [-104, 89]; NaN stays NaN (restored explicitly at the end: with
/// `+relaxed-simd` LLVM may turn the clamp into relaxed min/max, whose NaN result is unspecified).
#[inline(always)]
fn exp4(x_in: v128, c: &ExpConsts) -> v128 {
    let x = f32x4_pmin(f32x4_pmax(x_in, c.lo), c.hi);
    let k = f32x4_nearest(f32x4_mul(x, c.log2_e));
    let r = f32x4_sub(x, f32x4_mul(k, c.ln2_hi));
    let r = f32x4_sub(r, f32x4_mul(k, c.ln2_lo));
    let mut p = c.poly[0];
    for &a in &c.poly[1..] {
        p = f32x4_add(f32x4_mul(p, r), a);
    }
    // 2^k as two factors 2^(k/2) · 2^(k - k/2), each a valid normal or subnormal-free power.
    let ki = i32x4_trunc_sat_f32x4(k);
    let k1 = i32x4_shr(ki, 1);
    let k2 = i32x4_sub(ki, k1);
    let pow = |e: v128| i32x4_shl(i32x4_add(e, c.bias), 23);
    let y = f32x4_mul(f32x4_mul(p, pow(k1)), pow(k2));
    v128_bitselect(x_in, y, f32x4_ne(x_in, x_in))
}

#[inline(always)]
fn unary4(op: Unary, x: v128, c: &ExpConsts) -> v128 {
    let one = f32x4_splat(1.0);
    match op {
        Unary::Neg => f32x4_neg(x),
        Unary::Abs => f32x4_abs(x),
        Unary::Relu => v128_and(x, f32x4_gt(x, f32x4_splat(0.0))),
        Unary::Affine(m, a) => f32x4_add(f32x4_mul(x, f32x4_splat(m)), f32x4_splat(a)),
        Unary::Exp => exp4(x, c),
        Unary::Sqrt => f32x4_sqrt(x),
        Unary::Log => f32x4(
            f32x4_extract_lane::<0>(x).ln(),
            f32x4_extract_lane::<1>(x).ln(),
            f32x4_extract_lane::<2>(x).ln(),
            f32x4_extract_lane::<3>(x).ln(),
        ),
        Unary::Silu => f32x4_div(x, f32x4_add(one, exp4(f32x4_neg(x), c))),
        Unary::Sigmoid => f32x4_div(one, f32x4_add(one, exp4(f32x4_neg(x), c))),
        Unary::Tanh => tanh4(x, c),
        Unary::Gelu => {
            let inner = f32x4_mul(
                f32x4_splat(0.797_884_6),
                f32x4_add(
                    x,
                    f32x4_mul(f32x4_splat(0.044715), f32x4_mul(x, f32x4_mul(x, x))),
                ),
            );
            f32x4_mul(
                f32x4_mul(f32x4_splat(0.5), x),
                f32x4_add(one, tanh4(inner, c)),
            )
        }
    }
}

/// tanh(x) = sign(x)·(1 − 2/(e^{2|x|} + 1)); absolute error ≤ 4e-7 (the subtraction loses
/// relative accuracy near 0, which is why the bound is absolute).
#[inline(always)]
fn tanh4(x: v128, c: &ExpConsts) -> v128 {
    let ax = f32x4_abs(x);
    let e = exp4(f32x4_add(ax, ax), c);
    let t = f32x4_sub(
        f32x4_splat(1.0),
        f32x4_div(f32x4_splat(2.0), f32x4_add(e, f32x4_splat(1.0))),
    );
    v128_or(t, v128_and(x, f32x4_splat(-0.0)))
}

pub fn unary(op: Unary, x: &[f32], out: &mut [f32]) {
    let n = out.len().min(x.len());
    let body = n / 4 * 4;
    let c = ExpConsts::new();
    for i in (0..body).step_by(4) {
        store(&mut out[i..], unary4(op, load(&x[i..]), &c));
    }
    for i in body..n {
        out[i] = op.apply(x[i]);
    }
}

/// See `scalar::exp_sum`; the exponentials are `unary`'s (`exp4` on whole vectors, libm on the
/// tail), so the row has the bits of `x - shift` followed by `Unary::Exp`.
pub fn exp_sum(y: &mut [f32], shift: f32) -> f64 {
    let body = y.len() / 4 * 4;
    let (s, c) = (f32x4_splat(shift), ExpConsts::new());
    let mut sum = 0.0f64;
    for i in (0..body).step_by(4) {
        let e = exp4(f32x4_sub(load(&y[i..]), s), &c);
        store(&mut y[i..], e);
        for v in f32_lanes(e) {
            sum += v as f64;
        }
    }
    for v in &mut y[body..] {
        *v = (*v - shift).exp();
        sum += *v as f64;
    }
    sum
}

/// See `scalar::softmax_by_position`. Each head's row gets [`exp_sum`]'s bits as if alone
/// (`exp4` on the positions below its whole fours, libm on the rest, the sum in position order),
/// a vector now holding `4 / T` positions of the `T` heads (lane `l` is head `l % T`), so the
/// max, the exponentials, the heads' sums (in f64 lanes) and the scaling all run on vectors,
/// where one head's row at a time took a scalar max and sum chain per element.
pub fn softmax_by_position<const T: usize>(x: &mut [f32]) {
    const { assert!(T == 1 || T == 2 || T == 4) };
    let n = x.len() / T;
    let x = &mut x[..n * T];
    if T == 1 {
        let inv = (1.0 / exp_sum(x, max(x))) as f32;
        x.iter_mut().for_each(|v| *v *= inv);
        return;
    }
    let whole = x.len() / 4 * 4;
    let head_vector = |h: [f32; T]| f32x4(h[0], h[1 % T], h[2 % T], h[3 % T]);
    let shift = heads_max::<T>(x, whole);
    let s = head_vector(shift);
    let body = n / 4 * 4 * T;
    let (mut lo, mut hi) = (f64x2_splat(0.0), f64x2_splat(0.0));
    let mut add = |e: v128| {
        let high = promote_high(e);
        lo = f64x2_add(lo, f64x2_promote_low_f32x4(e));
        // Four heads: lanes 2, 3 are heads 2, 3; two heads: the next position of heads 0, 1.
        if T == 4 {
            hi = f64x2_add(hi, high);
        } else {
            lo = f64x2_add(lo, high);
        }
    };
    let c = ExpConsts::new();
    by_four_chunks(body, |i| {
        let e = exp4(f32x4_sub(load(&x[i..]), s), &c);
        store(&mut x[i..], e);
        add(e);
    });
    let mut sums = [0.0f64; T];
    sums[0] = f64x2_extract_lane::<0>(lo);
    sums[1] = f64x2_extract_lane::<1>(lo);
    if T == 4 {
        sums[2 % T] = f64x2_extract_lane::<0>(hi);
        sums[3 % T] = f64x2_extract_lane::<1>(hi);
    }
    for (i, v) in x.iter_mut().enumerate().skip(body) {
        *v = (*v - shift[i % T]).exp();
        sums[i % T] += *v as f64;
    }
    let inv = sums.map(|s| (1.0 / s) as f32);
    let iv = head_vector(inv);
    for i in (0..whole).step_by(4) {
        let v = f32x4_mul(load(&x[i..]), iv);
        store(&mut x[i..], v);
    }
    for (i, v) in x.iter_mut().enumerate().skip(whole) {
        *v *= inv[i % T];
    }
}

/// Each of `T` heads' largest score in `x` (by position, see [`softmax_by_position`]), NaN for a
/// head with a NaN: `pmax` from −∞ passes NaN lanes over, so a second mask records them.
/// `whole` is `x.len()` rounded down to whole vectors.
#[inline(always)]
fn heads_max<const T: usize>(x: &[f32], whole: usize) -> [f32; T] {
    let (mut m, mut nan) = (f32x4_splat(f32::NEG_INFINITY), i32x4_splat(0));
    for i in (0..whole).step_by(4) {
        let v = load(&x[i..]);
        nan = v128_or(nan, f32x4_ne(v, v));
        m = f32x4_pmax(m, v);
    }
    let mut out = [f32::NEG_INFINITY; T];
    let mut take = |l: usize, v: f32, bad: bool| {
        out[l % T] = nan_max(out[l % T], if bad { f32::NAN } else { v });
    };
    for (l, (v, bad)) in f32_lanes(m).into_iter().zip(i32_lanes(nan)).enumerate() {
        take(l, v, bad != 0);
    }
    for (i, &v) in x.iter().enumerate().skip(whole) {
        take(i, v, v.is_nan());
    }
    out
}

/// See `scalar::sum_squares` (same bits): the eight f64 lanes in four vectors, whose chains of
/// adds overlap. (With two lanes in one vector, each add waited on the one before: the RMS norm
/// of a 256-element head took 0.53 against 0.30 ns an element in Chromium.)
pub fn sum_squares(x: &[f32]) -> f64 {
    let body = x.len() / 8 * 8;
    let [mut l01, mut l23, mut l45, mut l67] = [f64x2_splat(0.0); 4];
    for i in (0..body).step_by(8) {
        // SAFETY: `i + 8 <= body <= x.len()`.
        let (a, b) = unsafe { (load_at(x.as_ptr(), i), load_at(x.as_ptr(), i + 4)) };
        let (a, b) = (f32x4_mul(a, a), f32x4_mul(b, b));
        l01 = f64x2_add(l01, f64x2_promote_low_f32x4(a));
        l23 = f64x2_add(l23, promote_high(a));
        l45 = f64x2_add(l45, f64x2_promote_low_f32x4(b));
        l67 = f64x2_add(l67, promote_high(b));
    }
    let lanes = f64x2_add(f64x2_add(l01, l23), f64x2_add(l45, l67));
    let mut sum = f64x2_extract_lane::<0>(lanes) + f64x2_extract_lane::<1>(lanes);
    for &v in &x[body..] {
        sum += (v * v) as f64;
    }
    sum
}
