//! The ×4 matmul (`quant::interleave`) of the SIMD builds, and the group sums that multiply
//! i16s.
//!
//! [`gemm_x4`] walks a matrix's groups of four rows against the activation rows and applies a
//! format's f32 steps in its canonical order; an [`X4`] format gives the integer sums of one
//! group block, a row a lane. Here are the sums that widen the weights to i16 and multiply them
//! by the activation's widened quants (`i32x4_dot_i16x8`, `Q8Act::wide_row`): Q8_0's for every
//! SIMD build (its quants are signed on both sides, which the relaxed `i8×i7` dot cannot take),
//! and Q4_0's and Q5_0's for SIMD128 builds without the relaxed dot (`relaxed.rs` has theirs).
//! All integer sums are exact, so every build gives the scalar twins' bits.

use core::arch::wasm32::*;

#[cfg(not(target_feature = "relaxed-simd"))]
use super::simd128::{bits_to_4, high_nibbles};
use super::simd128::{f32_lanes, Consts, Q8_BYTES};
use crate::dtype::DType;
use crate::quant::act::Q8Act;
#[cfg(not(target_feature = "relaxed-simd"))]
use crate::quant::interleave::Q5_HIGH;
use crate::quant::interleave::{group_block, GROUP, QS};

/// `out[r·n_w + o] = w_o · x_r` for Q8_0×4 weights (see `scalar::gemm_q8_0x4_q8_0`, same bits).
pub fn gemm_q8_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Q8_0x4>(w, act, out)
}

/// `out[r·n_w + o] = w_o · x_r` for Q4_0×4 weights (see `scalar::gemm_q4_0x4_q8_0`, same bits),
/// on i16 multiplies: SIMD128 builds.
#[cfg(not(target_feature = "relaxed-simd"))]
pub fn gemm_q4_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Nibbles<false>>(w, act, out)
}

/// [`gemm_q4_0x4_q8_0`] for Q5_0×4 weights (see `scalar::gemm_q5_0x4_q8_0`, same bits).
#[cfg(not(target_feature = "relaxed-simd"))]
pub fn gemm_q5_0x4_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_x4::<Nibbles<true>>(w, act, out)
}

/// A ×4 layout and its group-block integer sums.
pub(super) trait X4 {
    const DTYPE: DType;
    /// The quants' offset `o` (stored unsigned: `Σ (u − o)·x = Σ u·x − o·Σx`) over eight, the
    /// multiple of `Q8Act::sx8` (`8·Σx`) to subtract.
    const SX8_TIMES: i32;
    /// Whether `isum` reads the activation's quants widened to i16 (`Q8Act::wide_row`, 64
    /// bytes a block) rather than its Q8_0 quants.
    const WIDE: bool = false;
    /// `Σ u·x` of one group block's four rows (lane = row) against the activation block at each
    /// of `x` (its 32 quants, or with [`X4::WIDE`] their 64 bytes as i16), with the call's
    /// [`Consts`].
    ///
    /// # Safety
    /// `blk` must point at one whole group block and each `x` at the whole activation block.
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N], c: &Consts) -> [v128; N];
    /// Whether [`gemm_x4`] takes two groups a tile through [`X4::isum_pair`].
    const PAIRS: bool = false;
    /// [`X4::isum`] of two group blocks against four activation rows (`[j][i]`: group `j`,
    /// activation `i`), each activation load serving both groups. Formats with [`X4::PAIRS`]
    /// override it; the default is two `isum`s.
    ///
    /// # Safety
    /// As [`X4::isum`], for both blocks.
    #[inline(always)]
    unsafe fn isum_pair(blk: [*const u8; 2], x: [*const u8; 4], c: &Consts) -> [[v128; 4]; 2] {
        blk.map(|b| Self::isum::<4>(b, x, c))
    }
}

struct Q8_0x4;

impl X4 for Q8_0x4 {
    const DTYPE: DType = DType::Q8_0;
    const SX8_TIMES: i32 = 0;
    const WIDE: bool = true;
    /// Each vector of four bytes of each row (eight a block) widened once for all `N` rows. That
    /// is two of x86's vector multiplies a vector and nothing to widen on the activation's side.
    /// A sign-split pair of relaxed dots (`Σ w·x⁺ − Σ w·x⁻` in i16, the 7-bit side split) took
    /// the same two plus a widening, which V8 makes a third multiply, and the multiplier was the
    /// limit: widening by shifts instead took the Q8_0 LM head of Gemma 3 Q4_K_M from 9.66 to
    /// 8.85 ms a token on one thread, and this form from 8.35 to 7.24 (5.13 → 4.34 on two;
    /// interleaved A/Bs in Chromium, medians of 10).
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N], _: &Consts) -> [v128; N] {
        let mut acc = [(i32x4_splat(0), i32x4_splat(0)); N];
        for k in 0..8 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let w = (i16x8_extend_low_i8x16(v), i16x8_extend_high_i8x16(v));
            add_wide(&mut acc, w, x, 8 * k);
        }
        acc.map(row_lanes)
    }
}

/// Q4_0 (`FIFTH = false`) or Q5_0 quants as unsigned nibbles, with Q5_0's fifth bits taken from
/// the layout's bit planes, each vector widened to i16 for the multiplies: four of x86's vector
/// multiplies per sixteen weight bytes, where the relaxed dot takes two. Against the file
/// layout's SIMD128 dots it took Gemma 3 270M's decode from 52 to 78 tok/s (Q4_0) and from 34
/// to 61 (Q4_K_M, whose Q5_0 gate/up went 9.5 → 3.0 ms a token), prefill 221 → 281 and 134 →
/// 164 (one thread; 94 → 136 and 61 → 102 tok/s decode on two; interleaved A/Bs in Chromium).
///
/// Tiles keep one group (`X4::PAIRS` false): paired like the relaxed Q4_0 kernel, a wasm loop of
/// the kernel alone ran 50–52 against 43–46 GOP/s, but the one-thread simd build's prefill in
/// fresh Chromium engines went 193 → 150 tok/s (205 → 184 on the prompt again; medians of four).
#[cfg(not(target_feature = "relaxed-simd"))]
struct Nibbles<const FIFTH: bool>;

#[cfg(not(target_feature = "relaxed-simd"))]
impl<const FIFTH: bool> X4 for Nibbles<FIFTH> {
    const DTYPE: DType = if FIFTH { DType::Q5_0 } else { DType::Q4_0 };
    const SX8_TIMES: i32 = if FIFTH { 2 } else { 1 };
    const WIDE: bool = true;

    /// Chunk `k`'s low nibbles are elements `4k..` of each row, its high ones `16 + 4k..`; a
    /// plane's fifth bits go to bit 4 by one 16-bit shift and a mask (see `relaxed.rs`).
    #[inline(always)]
    unsafe fn isum<const N: usize>(blk: *const u8, x: [*const u8; N], c: &Consts) -> [v128; N] {
        let (mask, sixteen) = (c.nibble, c.bit4);
        let planes = FIFTH.then(|| v128_load(blk.add(Q5_HIGH) as *const v128));
        let mut acc = [(i32x4_splat(0), i32x4_splat(0)); N];
        for k in 0..4 {
            let v = v128_load(blk.add(QS + 16 * k) as *const v128);
            let (mut lo, mut hi) = (v128_and(v, mask), high_nibbles(v, mask));
            if let Some(h) = planes {
                lo = v128_or(lo, bits_to_4(h, 2 * k as u32, sixteen));
                hi = v128_or(hi, bits_to_4(h, 2 * k as u32 + 1, sixteen));
            }
            add_wide(&mut acc, widen_u8(lo), x, 8 * k);
            add_wide(&mut acc, widen_u8(hi), x, 32 + 8 * k);
        }
        acc.map(row_lanes)
    }
}

/// [`add_pair_dots`] against activation `i`'s four widened quants at byte `at` of `x[i]`
/// (`Q8Act::wide_row`), splat as one 64-bit word.
///
/// # Safety
/// Each `x[i] + at` must point at 8 readable bytes.
#[inline(always)]
unsafe fn add_wide<const N: usize>(
    acc: &mut [(v128, v128); N],
    w: (v128, v128),
    x: [*const u8; N],
    at: usize,
) {
    add_pair_dots(
        acc,
        w,
        x.map(|x| v128_load64_splat(x.add(at) as *const u64)),
    );
}

/// Adds to each `acc[i]` the i32 pair sums of the widened weights `w` (rows 0–1, rows 2–3: four
/// quants of each) times `xw[i]`, activation `i`'s four quants as i16, twice: lanes `2r, 2r + 1`
/// of a half hold row `r`'s two pairs ([`row_lanes`] adds them).
#[inline(always)]
pub(super) fn add_pair_dots<const N: usize>(
    acc: &mut [(v128, v128); N],
    w: (v128, v128),
    xw: [v128; N],
) {
    for (a, xw) in acc.iter_mut().zip(xw) {
        a.0 = i32x4_add(a.0, i32x4_dot_i16x8(w.0, xw));
        a.1 = i32x4_add(a.1, i32x4_dot_i16x8(w.1, xw));
    }
}

/// Unsigned quants (four of each of four rows) widened to i16: rows 0–1, rows 2–3.
#[cfg(not(target_feature = "relaxed-simd"))]
#[inline(always)]
pub(super) fn widen_u8(u: v128) -> (v128, v128) {
    (u16x8_extend_low_u8x16(u), u16x8_extend_high_u8x16(u))
}

/// The four rows' sums (lane = row) from [`add_pair_dots`]'s halves.
#[inline(always)]
pub(super) fn row_lanes((lo, hi): (v128, v128)) -> v128 {
    i32x4_add(
        i32x4_shuffle::<0, 2, 4, 6>(lo, hi),
        i32x4_shuffle::<1, 3, 5, 7>(lo, hi),
    )
}

/// The ×4 matmul of format `F`: each group of four weight rows against four activation rows at a
/// time (sharing each unpacked weight vector), then the rest one by one. With [`X4::PAIRS`] the
/// four-row tiles take two groups at a time first ([`group_pair_rows`]).
///
/// A decoded token's pass reads the matrix from memory in order and leaves the fetching ahead
/// to the CPU's prefetchers. Loads of each line 8 KB ahead, which the thirty-second session
/// added for the Intel Xeon host (decode 34.5 → 38–40 tok/s there), more than halved decode on
/// the AMD EPYC (Zen 4) host of 2026-12-07: Gemma 3 270M Q4_0 42 → 94 tok/s on one thread and
/// 73 → 157 on two without them, the LM head 14.2 → 5.8 ms a token (section profiles,
/// interleaved A/Bs in Chromium). Why Zen 4 loses that much was not profiled.
pub(super) fn gemm_x4<F: X4>(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let (rows, nb) = (act.rows(), act.blocks());
    if rows == 0 || nb == 0 {
        out.fill(0.0);
        return;
    }
    let group = nb * group_block(F::DTYPE);
    let stride = out.len() / rows;
    let groups = (stride / GROUP).min(w.len() / group);
    let c = Consts::new();
    // Without a four-row tile (decode) nothing is paired, and the pairs' loop is skipped.
    let tiled = rows / 4 * 4;
    let paired = if F::PAIRS && tiled > 0 {
        groups / 2 * 2
    } else {
        0
    };
    for g in (0..paired).step_by(2) {
        let wg = &w[g * group..(g + 2) * group];
        for r in (0..tiled).step_by(4) {
            // SAFETY: `wg` is two whole groups of `nb` blocks and rows `r..r + 4` exist in `act`.
            let sums = unsafe { group_pair_rows::<F>(wg.as_ptr(), group, act, r, &c) };
            for (j, sums) in sums.into_iter().enumerate() {
                put_groups(sums, &mut out[r * stride + (g + j) * GROUP..], stride);
            }
        }
    }
    for g in 0..groups {
        let wg = &w[g * group..(g + 1) * group];
        // The paired groups' four-row tiles are done.
        let mut r = if g < paired { tiled } else { 0 };
        while r + 4 <= rows {
            // SAFETY: `wg` is one whole group of `nb` blocks and rows `r..r + 4` exist in `act`.
            let sums = unsafe { group_rows::<F, 4>(wg.as_ptr(), nb, act, r, &c) };
            put_groups(sums, &mut out[r * stride + g * GROUP..], stride);
            r += 4;
        }
        while r < rows {
            // SAFETY: as above, for row `r`.
            let sums = unsafe { group_rows::<F, 1>(wg.as_ptr(), nb, act, r, &c) };
            put_groups(sums, &mut out[r * stride + g * GROUP..], stride);
            r += 1;
        }
    }
}

/// Writes a group's four sums (lane = weight row) for each of `N` activation rows, row `i` at
/// `out[i · stride..]`.
pub(super) fn put_groups<const N: usize>(sums: [v128; N], out: &mut [f32], stride: usize) {
    for (i, s) in sums.into_iter().enumerate() {
        out[i * stride..][..GROUP].copy_from_slice(&f32_lanes(s));
    }
}

/// Activation rows `r0..r0 + N` as the ×4 tiles read them: each row's first block as `isum`
/// reads it, the bytes between blocks, and each row's block scales and quant sums.
struct ActRows<const N: usize> {
    x: [*const u8; N],
    x_block: usize,
    dx: [*const f32; N],
    sx8: [*const i32; N],
}

impl<const N: usize> ActRows<N> {
    /// # Safety
    /// Rows `r0..r0 + N` must exist in `act` (and with [`X4::WIDE`], its widened rows).
    #[inline(always)]
    unsafe fn new<F: X4>(act: &Q8Act, r0: usize) -> Self {
        let nb = act.blocks();
        let (x, x_block): ([*const u8; N], usize) = if F::WIDE {
            let wide = |i: usize| act.wide_row(r0 + i).as_ptr() as *const u8;
            (core::array::from_fn(wide), 64)
        } else {
            let first = |i: usize| act.q8().as_ptr().add((r0 + i) * nb * Q8_BYTES + 2);
            (core::array::from_fn(first), Q8_BYTES)
        };
        ActRows {
            x,
            x_block,
            dx: core::array::from_fn(|i| act.dx().as_ptr().add((r0 + i) * nb)),
            sx8: core::array::from_fn(|i| act.sx8().as_ptr().add((r0 + i) * nb)),
        }
    }

    /// Each row's activation block `b`.
    ///
    /// # Safety
    /// Block `b` must exist in every row.
    #[inline(always)]
    unsafe fn block(&self, b: usize) -> [*const u8; N] {
        self.x.map(|p| p.add(b * self.x_block))
    }

    /// `acc + (dw · dx) · (isum − t·sx8)` for row `i`'s block `b` (`t` = [`X4::SX8_TIMES`]): one
    /// block's integer sums of one group, scaled in the twin's f32 steps.
    ///
    /// # Safety
    /// Block `b` must exist in row `i`.
    #[inline(always)]
    unsafe fn scaled_add<F: X4>(
        &self,
        acc: v128,
        isum: v128,
        dw: v128,
        i: usize,
        b: usize,
    ) -> v128 {
        let isum = match F::SX8_TIMES {
            0 => isum,
            t => i32x4_sub(isum, i32x4_splat(*self.sx8[i].add(b) * t)),
        };
        let scale = f32x4_mul(dw, f32x4_splat(*self.dx[i].add(b)));
        f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)))
    }
}

/// The four sums of one group against activation rows `r0..r0 + N`, lane = weight row, each in
/// the canonical block order. The weight scales are finite (`interleave` leaves a matrix with an
/// inf/NaN one in the file's layout), so they convert without the per-block check.
///
/// # Safety
/// `wg` must point at one group of `nb` blocks and rows `r0..r0 + N` must exist in `act`.
#[inline(always)]
unsafe fn group_rows<F: X4, const N: usize>(
    wg: *const u8,
    nb: usize,
    act: &Q8Act,
    r0: usize,
    c: &Consts,
) -> [v128; N] {
    let rows = ActRows::<N>::new::<F>(act, r0);
    accumulate_blocks4_n::<N>(nb, |b, acc| {
        let blk = wg.add(b * group_block(F::DTYPE));
        let dw = c.f16x4(blk);
        let isum = F::isum::<N>(blk, rows.block(b), c);
        core::array::from_fn(|i| rows.scaled_add::<F>(acc[i], isum[i], dw, i, b))
    })
}

/// [`group_rows`] of two groups (`w` and `w + group`) against activation rows `r0..r0 + 4`
/// (`[j][i]`: group `j`, row `r0 + i`), in the same f32 order. Each activation load serves both
/// groups (`X4::isum_pair`). In Chromium (relaxed build, fastest of 12) a 2,048 × 640 Q4_0
/// matrix against 106 rows ran 86–90 GOP/s against 72–78 a group at a time, 640 × 2,048 89–94
/// against 81–82; Gemma 3 270M Q4_0's prefill went 307 → 354 tok/s on one thread and 542 → 622
/// on two (section profiles, medians of four interleaved runs). Three or four groups, or two
/// against eight rows, ran no faster than one. The sixteen accumulators (four block sets of two
/// groups' four rows) live in memory, indexed by block: as `accumulate_blocks4_n`'s unrolled
/// sets V8 spilled them with the rest and the tile ran 72–80 GOP/s against 89–91.
///
/// # Safety
/// `w` must point at two whole groups of `group` bytes (`act.blocks()` blocks each), and rows
/// `r0..r0 + 4` must exist in `act`.
#[inline(always)]
unsafe fn group_pair_rows<F: X4>(
    w: *const u8,
    group: usize,
    act: &Q8Act,
    r0: usize,
    c: &Consts,
) -> [[v128; 4]; 2] {
    let rows = ActRows::<4>::new::<F>(act, r0);
    let mut sets = [[[f32x4_splat(0.0); 4]; 2]; 4];
    for b in 0..act.blocks() {
        let blk = [w, w.add(group)].map(|p| p.add(b * group_block(F::DTYPE)));
        let isum = F::isum_pair(blk, rows.block(b), c);
        let set = &mut sets[b % 4];
        for j in 0..2 {
            let dw = c.f16x4(blk[j]);
            for i in 0..4 {
                set[j][i] = rows.scaled_add::<F>(set[j][i], isum[j][i], dw, i, b);
            }
        }
    }
    core::array::from_fn(|j| {
        core::array::from_fn(|i| {
            f32x4_add(
                f32x4_add(sets[0][j][i], sets[1][j][i]),
                f32x4_add(sets[2][j][i], sets[3][j][i]),
            )
        })
    })
}

/// `simd128::accumulate_blocks4` for `N` accumulators at once: block `b` into set `b % 4`, the
/// sets reduced as `(a0 + a1) + (a2 + a3)`.
#[inline(always)]
fn accumulate_blocks4_n<const N: usize>(
    nb: usize,
    mut step: impl FnMut(usize, [v128; N]) -> [v128; N],
) -> [v128; N] {
    let zero = [f32x4_splat(0.0); N];
    let (mut a0, mut a1, mut a2, mut a3) = (zero, zero, zero, zero);
    let mut b = 0;
    while b + 4 <= nb {
        a0 = step(b, a0);
        a1 = step(b + 1, a1);
        a2 = step(b + 2, a2);
        a3 = step(b + 3, a3);
        b += 4;
    }
    let mut acc = [a0, a1, a2, a3];
    for (lane, b) in (b..nb).enumerate() {
        acc[lane] = step(b, acc[lane]);
    }
    core::array::from_fn(|i| {
        f32x4_add(
            f32x4_add(acc[0][i], acc[1][i]),
            f32x4_add(acc[2][i], acc[3][i]),
        )
    })
}
