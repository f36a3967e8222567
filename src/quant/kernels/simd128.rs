//! wasm32 SIMD128 kernels. Each mirrors its twin in `scalar.rs`: the same exact integer block
//! sums and the same four-accumulator f32 order (one accumulator per lane), so results are
//! bit-identical (tests check).

use core::arch::wasm32::*;

use crate::dtype::DType;
use crate::quant::act::Q8Act;
use crate::quant::blocks::read_f16;
use half::f16;

pub(crate) const Q4_BYTES: usize = 18; // DType::Q4_0.block_bytes()
pub(crate) const Q8_BYTES: usize = 34; // DType::Q8_0.block_bytes()
const _: () =
    assert!(DType::Q4_0.block_bytes() == Q4_BYTES && DType::Q8_0.block_bytes() == Q8_BYTES);

#[inline(always)]
pub(crate) fn load16(b: &[u8]) -> v128 {
    assert!(b.len() >= 16);
    // SAFETY: the assert above guarantees 16 readable bytes; v128_load allows unaligned reads.
    unsafe { v128_load(b.as_ptr() as *const v128) }
}

/// Σ a·b over 16 signed bytes, as four i32 partial sums: the byte products widened to i16
/// (exact: |a·b| ≤ 128·128 = 2^14), then each half's neighbours added into i32 — five
/// instructions instead of the seven of widening both operands first.
#[inline(always)]
fn dot_i8x16(a: v128, b: v128) -> v128 {
    let lo = i32x4_extadd_pairwise_i16x8(i16x8_extmul_low_i8x16(a, b));
    let hi = i32x4_extadd_pairwise_i16x8(i16x8_extmul_high_i8x16(a, b));
    i32x4_add(lo, hi)
}

/// The high nibbles of `q`'s bytes, `mask` being `u8x16_splat(0x0F)`. Wasm's 8-bit shifts have
/// no x86 instruction: V8 emits a 16-bit shift and rebuilds a mask for every one; a 16-bit shift
/// and a mask kept in a register do the same (the mask drops the bits pulled across bytes).
#[inline(always)]
pub(crate) fn high_nibbles(q: v128, mask: v128) -> v128 {
    v128_and(u16x8_shr(q, 4), mask)
}

/// Bit `k` (and up) of every byte of `h` moved to bit 4 (and up), where `mask` keeps it: 0x10
/// for one bit, 0x30 for two. One 16-bit shift (none for `k` = 4) and an and, for the reason
/// [`high_nibbles`] gives; the mask, clear below bit 4 and above bit `7 − (k − 4)`, drops what
/// the shift pulls across bytes.
#[inline(always)]
pub(crate) fn bits_to_4(h: v128, k: u32, mask: v128) -> v128 {
    let at_4 = match k {
        0..=3 => u16x8_shl(h, 4 - k),
        4 => h,
        _ => u16x8_shr(h, k - 4),
    };
    v128_and(at_4, mask)
}

/// The four f32 lanes of `v`.
#[inline(always)]
pub(crate) fn f32_lanes(v: v128) -> [f32; 4] {
    [
        f32x4_extract_lane::<0>(v),
        f32x4_extract_lane::<1>(v),
        f32x4_extract_lane::<2>(v),
        f32x4_extract_lane::<3>(v),
    ]
}

/// The four i32 lanes of `v`.
#[inline(always)]
pub(crate) fn i32_lanes(v: v128) -> [i32; 4] {
    [
        i32x4_extract_lane::<0>(v),
        i32x4_extract_lane::<1>(v),
        i32x4_extract_lane::<2>(v),
        i32x4_extract_lane::<3>(v),
    ]
}

/// `[Σa, Σb, Σc, Σd]` from four vectors of partial sums (a 4×4 transpose-and-add).
#[inline(always)]
pub(crate) fn hsum4_i32(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(a, b),
        i32x4_shuffle::<2, 6, 3, 7>(a, b),
    );
    let cd = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(c, d),
        i32x4_shuffle::<2, 6, 3, 7>(c, d),
    );
    i32x4_add(
        i32x4_shuffle::<0, 1, 4, 5>(ab, cd),
        i32x4_shuffle::<2, 3, 6, 7>(ab, cd),
    )
}

/// Runs `block_isum` (the exact integer sum of one block, as four i32 partials) over whole
/// blocks four at a time: lane `l` accumulates `(d_w · d_x) · isum` of blocks `4k + l`, exactly
/// like `scalar::accumulate4`; a ragged tail goes into lanes 0.. in order. Both sides' f16
/// scales (at the start of each block) are decoded four at a time in SIMD, exactly; a row with
/// an inf/NaN scale takes the scalar scale path instead, whose results those are.
#[inline(always)]
pub(super) fn dot_blocks4(
    w: &[u8],
    x: &[u8],
    wb_len: usize,
    xb_len: usize,
    block_isum: impl Fn(&[u8], &[u8], &Consts) -> v128,
) -> f32 {
    let c = Consts::new();
    let block_isum = |wb: &[u8], xb: &[u8]| block_isum(wb, xb, &c);
    let mut special = i32x4_splat(0);
    let fast = blocks4(w, x, wb_len, xb_len, &block_isum, |w4, x4| {
        // SAFETY: `blocks4` passes slices that start at four whole blocks of each side, so the
        // four 2-byte scales `wb_len` / `xb_len` bytes apart are readable.
        unsafe {
            f32x4_mul(
                q4_0_scales4(w4.as_ptr(), wb_len, &mut special, &c),
                q4_0_scales4(x4.as_ptr(), xb_len, &mut special, &c),
            )
        }
    });
    if !v128_any_true(special) {
        return fast;
    }
    // An inf/NaN scale (a broken file): the scalar decoding defines the result.
    blocks4(w, x, wb_len, xb_len, &block_isum, |w4, x4| {
        let scale = |k: usize| read_f16(&w4[k * wb_len..]) * read_f16(&x4[k * xb_len..]);
        f32x4(scale(0), scale(1), scale(2), scale(3))
    })
}

/// The body of [`dot_blocks4`]: `scales4(w4, x4)` gives the four `d_w · d_x` of the blocks
/// starting at `w4` / `x4`.
#[inline(always)]
fn blocks4(
    w: &[u8],
    x: &[u8],
    wb_len: usize,
    xb_len: usize,
    block_isum: &impl Fn(&[u8], &[u8]) -> v128,
    mut scales4: impl FnMut(&[u8], &[u8]) -> v128,
) -> f32 {
    let n = (w.len() / wb_len).min(x.len() / xb_len);
    let mut acc = f32x4_splat(0.0);
    let mut b = 0;
    while b + 4 <= n {
        let (w4, x4) = (&w[b * wb_len..], &x[b * xb_len..]);
        let isums = hsum4_i32(
            block_isum(w4, x4),
            block_isum(&w4[wb_len..], &x4[xb_len..]),
            block_isum(&w4[2 * wb_len..], &x4[2 * xb_len..]),
            block_isum(&w4[3 * wb_len..], &x4[3 * xb_len..]),
        );
        acc = f32x4_add(acc, f32x4_mul(scales4(w4, x4), f32x4_convert_i32x4(isums)));
        b += 4;
    }
    finish_blocks4(acc, b, n, w, x, wb_len, xb_len, block_isum)
}

/// The ragged tail (blocks `b..n`, into lanes 0.. in order) and the canonical lane reduction.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn finish_blocks4(
    acc: v128,
    b: usize,
    n: usize,
    w: &[u8],
    x: &[u8],
    wb_len: usize,
    xb_len: usize,
    block_isum: &impl Fn(&[u8], &[u8]) -> v128,
) -> f32 {
    let mut lanes = f32_lanes(acc);
    for (lane, b) in (b..n).enumerate() {
        let (wb, xb) = (&w[b * wb_len..], &x[b * xb_len..]);
        let v = block_isum(wb, xb);
        let isum = i32x4_extract_lane::<0>(hsum4_i32(v, v, v, v));
        lanes[lane] += read_f16(wb) * read_f16(xb) * isum as f32;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// The signed Q4_0 values of one block: elements 0..16 (low nibbles) and 16..32 (high), minus 8.
#[inline(always)]
fn unpack_q4_0(qs: v128, c: &Consts) -> (v128, v128) {
    let lo = i8x16_sub(v128_and(qs, c.nibble), c.eight);
    let hi = i8x16_sub(high_nibbles(qs, c.nibble), c.eight);
    (lo, hi)
}

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb, c| {
        let (lo, hi) = unpack_q4_0(load16(&wb[2..]), c);
        i32x4_add(
            dot_i8x16(lo, load16(&xb[2..])),
            dot_i8x16(hi, load16(&xb[18..])),
        )
    })
}

pub fn vec_dot_q8_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    dot_blocks4(w, x, Q8_BYTES, Q8_BYTES, |wb, xb, _| {
        i32x4_add(
            dot_i8x16(load16(&wb[2..]), load16(&xb[2..])),
            dot_i8x16(load16(&wb[18..]), load16(&xb[18..])),
        )
    })
}

/// ggml's `quantize_row_q8_0_ref`, vectorised: `amax` is an exact max, `d = amax / 127` and
/// `id = 1 / d` are the same scalar operations, and rounding is half away from zero like C's
/// `roundf`.
///
/// The max is `pmax(m, |x|)` (`m < |x| ? |x| : m`) across lanes and then across the vector:
/// one `maxps` each, where wasm's NaN-propagating `max` costs several instructions and a
/// scalar `max` branches (a wasm test in Chromium, 106 rows of 640: ~100 → ~60 ns a block).
/// From `m = 0` it passes a NaN over as the scalar twin's `f32::max` does.
pub fn quantize_row_q8_0(x: &[f32], out: &mut [u8]) {
    quantize_q8_0_blocks(x, out, |_, _| {});
}

/// [`quantize_row_q8_0`] that also writes each block's quant sum `Σq` into `sums` (what the Q4_0
/// kernels take the weights' offset out with, `Q8Act::sx8`), from the quants' i16 vectors
/// while they are in registers, where `Q8Act` summed the stored bytes again afterwards.
pub fn quantize_row_q8_0_sums(x: &[f32], out: &mut [u8], sums: &mut [i32]) {
    quantize_q8_0_blocks(x, out, |b, q16| {
        let pairs = i16x8_add(i16x8_add(q16[0], q16[1]), i16x8_add(q16[2], q16[3]));
        let s = i32x4_extadd_pairwise_i16x8(pairs);
        let s = i32x4_add(s, i32x4_shuffle::<2, 3, 0, 1>(s, s));
        if let Some(sum) = sums.get_mut(b) {
            *sum = i32x4_extract_lane::<0>(i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s)));
        }
    });
}

/// The vector constants of [`quantize_q8_0_blocks`], made once a call (see [`Consts`]: V8
/// rebuilds a constant at every use in a loop). With them, the sums and the relaxed conversion,
/// V8 14.6's loop over a prompt's activation blocks went from 362 instructions a block (96 of
/// them rebuilding constants) to 239. Quantizing is ~3.5 % of a one-thread prompt (done twice,
/// Gemma 3 270M Q4_0's prefill in Chromium went 370 / 350 / 362 → 359 / 336 / 349 tok/s).
#[derive(Clone, Copy)]
struct Q8Consts {
    /// The sign bit of each lane.
    sign: v128,
    /// 0.5's predecessor (see the rounding below).
    below_half: v128,
    /// The i8 range as f32, for the conversion's clamp.
    range: (v128, v128),
}

impl Q8Consts {
    #[inline(always)]
    fn new() -> Self {
        core::hint::black_box(Q8Consts {
            sign: f32x4_splat(-0.0),
            below_half: f32x4_splat(f32::from_bits(0.5f32.to_bits() - 1)),
            range: (f32x4_splat(-128.0), f32x4_splat(127.0)),
        })
    }
}

/// Quantizes each block of `x` into `out`, handing `block(b, q16)` each block's quants as four
/// vectors of eight i16 (elements `8k..8k + 8` in vector `k`).
#[inline(always)]
fn quantize_q8_0_blocks(x: &[f32], out: &mut [u8], mut block: impl FnMut(usize, [v128; 4])) {
    let c = Q8Consts::new();
    for (b, (xb, ob)) in x
        .chunks_exact(32)
        .zip(out.chunks_exact_mut(Q8_BYTES))
        .enumerate()
    {
        let v: [v128; 8] = core::array::from_fn(|i| {
            let c = &xb[4 * i..4 * i + 4];
            // SAFETY: `c` is four f32s; unaligned loads are allowed.
            unsafe { v128_load(c.as_ptr() as *const v128) }
        });
        let mut m = f32x4_splat(0.0);
        for vi in &v {
            m = f32x4_pmax(m, v128_andnot(*vi, c.sign));
        }
        let m = f32x4_pmax(m, i32x4_shuffle::<2, 3, 0, 1>(m, m));
        let amax = f32x4_extract_lane::<0>(f32x4_pmax(m, i32x4_shuffle::<1, 0, 3, 2>(m, m)));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        ob[..2].copy_from_slice(&f16::from_f32(d).to_bits().to_le_bytes());
        let idv = f32x4_splat(id);
        // `trunc(s ± 0.49999997)` rounds halves away from zero as `roundf` does (checked once
        // natively over every f32; the tests compare this kernel with its twin either side of
        // each half), in four operations where trunc-and-step took eight.
        let q32: [v128; 8] = core::array::from_fn(|i| {
            let s = f32x4_mul(v[i], idv);
            to_i32(
                f32x4_trunc(f32x4_add(s, v128_or(c.below_half, v128_and(s, c.sign)))),
                &c,
            )
        });
        let q16: [v128; 4] =
            core::array::from_fn(|k| i16x8_narrow_i32x4(q32[2 * k], q32[2 * k + 1]));
        // SAFETY: `ob` is 34 bytes, so bytes 2..18 and 18..34 are in bounds; stores are unaligned-safe.
        unsafe {
            v128_store(
                ob[2..18].as_mut_ptr() as *mut v128,
                i8x16_narrow_i16x8(q16[0], q16[1]),
            );
            v128_store(
                ob[18..34].as_mut_ptr() as *mut v128,
                i8x16_narrow_i16x8(q16[2], q16[3]),
            );
        }
        block(b, q16);
    }
}

/// Whole-valued `r` as i32 lanes in the i8 range, as the narrowing to i8 after it sees them:
/// NaN 0, the rest saturated (an infinite `id` from a subnormal `d` makes `±inf`), so that the
/// i16 vectors [`quantize_q8_0_blocks`] hands on hold the quants themselves.
#[inline(always)]
fn to_i32(r: v128, c: &Q8Consts) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    let r = v128_and(r, f32x4_eq(r, r));
    // `pmax` and `pmin` pass a NaN in their first operand through.
    let r = f32x4_pmin(f32x4_pmax(r, c.range.0), c.range.1);
    // The relaxed conversion is one x86 instruction where the saturating one takes several;
    // after the clamp (and NaN lanes zeroed) it is exact.
    #[cfg(target_feature = "relaxed-simd")]
    return i32x4_relaxed_trunc_f32x4(r);
    #[cfg(not(target_feature = "relaxed-simd"))]
    i32x4_trunc_sat_f32x4(r)
}

/// Exact `Σ a[i]·b[i]` over signed bytes; the integer sum equals the scalar twin's.
pub fn isum_i8(a: &[i8], b: &[u8]) -> i32 {
    let n = a.len().min(b.len());
    let body = n / 16 * 16;
    let mut acc = i32x4_splat(0);
    for i in (0..body).step_by(16) {
        // SAFETY: `a` has at least `body` elements; i8 and u8 share size and alignment.
        let av = unsafe { v128_load(a[i..].as_ptr() as *const v128) };
        acc = i32x4_add(acc, dot_i8x16(av, load16(&b[i..])));
    }
    let mut sum = i32x4_extract_lane::<0>(hsum4_i32(acc, acc, acc, acc));
    for i in body..n {
        sum += a[i] as i32 * (b[i] as i8) as i32;
    }
    sum
}

/// The f16 scales of four Q4_0 blocks `stride` bytes apart (consecutive blocks of a row, or one
/// block of four rows) starting at `w`, as f32, exact for finite
/// scales; `special` gets all-ones lanes where a scale is inf/NaN (the caller then falls back to
/// the scalar twin). Each scale lands in the high half of its i32 lane, so one arithmetic shift
/// puts the exponent and mantissa in f32 position (the smeared sign bits are masked off) and the
/// multiply by 2^112 rebiases, also normalising subnormals exactly.
///
/// # Safety
/// `w` must point at four readable Q4_0 blocks.
#[inline(always)]
unsafe fn q4_0_scales4(w: *const u8, stride: usize, special: &mut v128, c: &Consts) -> v128 {
    let mut h = i32x4_splat(0);
    h = v128_load16_lane::<1>(h, w as *const u16);
    h = v128_load16_lane::<3>(h, w.add(stride) as *const u16);
    h = v128_load16_lane::<5>(h, w.add(2 * stride) as *const u16);
    h = v128_load16_lane::<7>(h, w.add(3 * stride) as *const u16);
    *special = v128_or(*special, i32x4_eq(v128_and(h, c.f16_exp), c.f16_exp));
    f16_bits_to_f32_with(i32x4_shr(h, 3), c.f16.0, c.f16.1)
}

/// [`f16_bits_to_f32_with`]'s two constants: the bits it keeps, and the rebias.
#[inline(always)]
pub(crate) fn f16_constants() -> (v128, v128) {
    (
        i32x4_splat(0x8FFF_E000u32 as i32),
        f32x4_splat(f32::from_bits(0x7780_0000)),
    )
}

/// Finite f16 values whose bits sit where f32's do in each i32 lane (the sign at bit 31,
/// exponent and mantissa at bits 13..28; whatever bits 28..31 hold is masked off) as f32: scaled
/// by 2^112, the exponent biases' difference, which also normalises subnormals. The constants
/// are [`f16_constants`]', passed in (see [`Consts`]).
#[inline(always)]
pub(crate) fn f16_bits_to_f32_with(v: v128, keep: v128, rebias: v128) -> v128 {
    f32x4_mul(v128_and(v, keep), rebias)
}

/// The vector constants of the quantized kernels (the ×4 ones and the file layout's), made once a
/// call and handed down. V8's optimising tier builds a `v128.const` afresh at each use in a
/// loop, three x86 instructions each (a load from its constant pool into a general register, a
/// move to a vector register, a duplicate):
/// a decoded token's Q4_0 ×4 loop spent 120 of its 385 instructions on them, the prompt's
/// one-group tiles 120 of 967 (four blocks; V8 14.6 in Node 26, `--print-wasm-code`). Passed
/// through `black_box`, they are values the engine keeps in a register or reloads from the stack.
/// In Chromium (one thread, section profiles, two interleaved rounds) Gemma 3 270M Q4_K_M's
/// prefill went 226.7 / 225.6 → 256.6 / 271.8 tok/s and its decode 56.9 / 60.4 → 62.4 / 63.0;
/// Q4_0's moved within the host's noise (prefill 340–360 tok/s either way). The file layout's
/// Q4_0 loop over four weight rows had 52 rebuilds in 458 instructions (four blocks).
#[derive(Clone, Copy)]
pub(super) struct Consts {
    /// Every byte 0x0F: a nibble; every byte 8: Q4_0's offset.
    pub(super) nibble: v128,
    pub(super) eight: v128,
    /// Every byte 16: Q5_0's (and Q5_K's) fifth bit at bit 4.
    pub(super) bit4: v128,
    /// Every byte 0x30: Q6_K's top bits at bits 4–5.
    pub(super) bits45: v128,
    /// Every byte 0x3F and every byte 3: the K formats' packed 6-bit scales.
    pub(super) low6: v128,
    pub(super) low2: v128,
    /// Each i32 lane's low byte, and (relaxed builds) its low half.
    pub(super) byte: v128,
    #[cfg(target_feature = "relaxed-simd")]
    pub(super) half: v128,
    /// Every i16 lane 1: i16 pairs summed into i32 lanes by `i32x4_dot_i16x8`, one `pmaddwd`
    /// on a register. V8 makes `i32x4.extadd_pairwise_i16x8_s` the same `pmaddwd` on a
    /// constant whose address it reloads at each use, two more instructions: eight a block in
    /// the Q4_0 pair tile (one-thread prefill in node 309–317 → 316–321 tok/s, 1,060 tokens).
    #[cfg(target_feature = "relaxed-simd")]
    pub(super) ones16: v128,
    /// [`f16_constants`], and the f16 exponent in each i32 lane's high half (inf/NaN scales).
    f16: (v128, v128),
    f16_exp: v128,
}

impl Consts {
    #[inline(always)]
    pub(super) fn new() -> Self {
        core::hint::black_box(Consts {
            nibble: u8x16_splat(0x0F),
            eight: u8x16_splat(8),
            bit4: u8x16_splat(16),
            bits45: u8x16_splat(0x30),
            low6: u8x16_splat(0x3F),
            low2: u8x16_splat(3),
            byte: u32x4_splat(0xFF),
            #[cfg(target_feature = "relaxed-simd")]
            half: u32x4_splat(0xFFFF),
            #[cfg(target_feature = "relaxed-simd")]
            ones16: i16x8_splat(1),
            f16: f16_constants(),
            f16_exp: i32x4_splat(0x7C00_0000),
        })
    }

    /// The four rows' f16 scales at the start of a group block `p` as f32, for finite ones (the
    /// ×4 layout's, checked by `interleave`): each sign-extended into its i32 lane (a widening
    /// load; a shuffle with zeros had V8 rebuild two byte-shuffle masks each block, ~10 % slower)
    /// and shifted so that sign, exponent and mantissa sit where f32's do (`f16_bits_to_f32_with`).
    ///
    /// # Safety
    /// `p` must point at 8 readable bytes.
    #[inline(always)]
    pub(super) unsafe fn f16x4(&self, p: *const u8) -> v128 {
        let v = i32x4_shl(i32x4_load_extend_i16x4(p as *const i16), 13);
        f16_bits_to_f32_with(v, self.f16.0, self.f16.1)
    }
}

/// Σ nibble·x of one Q4_0 block (`qs`: its 16 quant bytes) against Q8_0 quants `x0` (elements
/// 0..16) and `x1` (16..32), as eight i16 partials; the caller subtracts the prepared `8·Σx` once
/// the block is summed. `dot16(x, u)` multiplies signed bytes by nibbles 0..=15 and adds
/// neighbours into i16 lanes, so a lane is four products, |lane| ≤ 4·15·128 = 7680, and any four
/// lanes still add up without overflow (see `hsum4_i16`).
#[inline(always)]
pub(super) fn q4_0_block_isum(
    dot16: impl Fn(v128, v128) -> v128,
    qs: v128,
    x0: v128,
    x1: v128,
    c: &Consts,
) -> v128 {
    let (lo, hi) = (v128_and(qs, c.nibble), high_nibbles(qs, c.nibble));
    i16x8_add(dot16(x0, lo), dot16(x1, hi))
}

/// `[Σa, Σb, Σc, Σd]` (as i32) of four vectors of eight i16 partials whose every four-lane
/// subset sum fits in i16: transposed with i32-lane shuffles and added as i16, widened once.
#[inline(always)]
fn hsum4_i16(a: v128, b: v128, c: v128, d: v128) -> v128 {
    let ab = i16x8_add(
        i32x4_shuffle::<0, 4, 1, 5>(a, b),
        i32x4_shuffle::<2, 6, 3, 7>(a, b),
    );
    let cd = i16x8_add(
        i32x4_shuffle::<0, 4, 1, 5>(c, d),
        i32x4_shuffle::<2, 6, 3, 7>(c, d),
    );
    i32x4_extadd_pairwise_i16x8(i16x8_add(
        i32x4_shuffle::<0, 1, 4, 5>(ab, cd),
        i32x4_shuffle::<2, 3, 6, 7>(ab, cd),
    ))
}

/// `dot16` for plain SIMD128: byte products widened to i16 (exact), halves added. The nibbles
/// `u` (0..=15) widen unsigned, one zero-extension each: with the nibble mask a [`Consts`] value,
/// LLVM no longer knew them non-negative, and the signed `extmul` it had narrowed so before cost
/// V8 14.6's four-row tile 500 instructions a block set against 453.
#[inline(always)]
fn dot16_extmul(x: v128, u: v128) -> v128 {
    i16x8_add(
        i16x8_mul(i16x8_extend_low_i8x16(x), u16x8_extend_low_u8x16(u)),
        i16x8_mul(i16x8_extend_high_i8x16(x), u16x8_extend_high_u8x16(u)),
    )
}

/// One Q4_0 row against one prepared activation row: blocks four at a time, lane `l` of the
/// accumulator taking block `4k + l` (the canonical order of `scalar::accumulate4`).
///
/// # Safety
/// `w` must hold `nb` Q4_0 blocks, `x` `nb` Q8_0 blocks, `dx` `nb` floats and `sx8` `nb` i32.
#[inline(always)]
unsafe fn q4_0_row1(
    dot16: impl Fn(v128, v128) -> v128 + Copy,
    w: *const u8,
    nb: usize,
    x: *const u8,
    dx: *const f32,
    sx8: *const i32,
    c: &Consts,
) -> f32 {
    let block = |b: usize| {
        let (wb, xb) = (w.add(b * Q4_BYTES), x.add(b * Q8_BYTES));
        q4_0_block_isum(
            dot16,
            v128_load(wb.add(2) as *const v128),
            v128_load(xb.add(2) as *const v128),
            v128_load(xb.add(18) as *const v128),
            c,
        )
    };
    let mut acc = f32x4_splat(0.0);
    let mut special = i32x4_splat(0);
    let mut b = 0;
    while b + 4 <= nb {
        let isum = i32x4_sub(
            hsum4_i16(block(b), block(b + 1), block(b + 2), block(b + 3)),
            v128_load(sx8.add(b) as *const v128),
        );
        let scale = f32x4_mul(
            q4_0_scales4(w.add(b * Q4_BYTES), Q4_BYTES, &mut special, c),
            v128_load(dx.add(b) as *const v128),
        );
        acc = f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)));
        b += 4;
    }
    let mut lanes = f32_lanes(acc);
    for (lane, b) in (b..nb).enumerate() {
        let v = block(b);
        let isum = i32x4_extract_lane::<0>(hsum4_i16(v, v, v, v)) - *sx8.add(b);
        let dw = crate::quant::blocks::f16_to_f32(
            (w.add(b * Q4_BYTES) as *const u16).read_unaligned().to_le(),
        );
        lanes[lane] += dw * *dx.add(b) * isum as f32;
    }
    if v128_any_true(special) {
        // An inf/NaN scale (a broken file): let the scalar twin define the result.
        return super::scalar::vec_dot_q4_0_q8_0(
            core::slice::from_raw_parts(w, nb * Q4_BYTES),
            core::slice::from_raw_parts(x, nb * Q8_BYTES),
        );
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// Runs `step(b, acc)` over blocks `0..nb`, block `b` into accumulator `b % 4`, and returns
/// `(acc0 + acc1) + (acc2 + acc3)`: per lane, the canonical order of `scalar::accumulate4`.
#[inline(always)]
fn accumulate_blocks4(nb: usize, mut step: impl FnMut(usize, v128) -> v128) -> v128 {
    let mut acc = [f32x4_splat(0.0); 4];
    let mut b = 0;
    while b + 4 <= nb {
        acc[0] = step(b, acc[0]);
        acc[1] = step(b + 1, acc[1]);
        acc[2] = step(b + 2, acc[2]);
        acc[3] = step(b + 3, acc[3]);
        b += 4;
    }
    for (lane, b) in (b..nb).enumerate() {
        acc[lane] = step(b, acc[lane]);
    }
    f32x4_add(f32x4_add(acc[0], acc[1]), f32x4_add(acc[2], acc[3]))
}

/// One Q4_0 row against four prepared activation rows `r0..r0 + 4`: the weight block is unpacked
/// once for all four, the four integer sums are transposed into one vector (lane = row), and
/// block `b` goes into accumulator `b % 4` — the same per-element order as `q4_0_row1`.
///
/// # Safety
/// As `q4_0_row1`, for rows `r0..r0 + 4` of an activation with `rows` rows; the four results
/// go to `out`, `out + stride`, `out + 2·stride`, `out + 3·stride`. `dw` holds the weight row's
/// `nb` block scales as f32 (decoded once per row, not once per four activation rows).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn q4_0_row4(
    dot16: impl Fn(v128, v128) -> v128 + Copy,
    w: *const u8,
    nb: usize,
    act: &Q8Act,
    r0: usize,
    out: *mut f32,
    stride: usize,
    dw: *const f32,
    c: &Consts,
) {
    let rows = act.rows();
    let row_bytes = nb * Q8_BYTES;
    let x = act.q8().as_ptr().add(r0 * row_bytes);
    let sx8_t = act.sx8_t().as_ptr().add(r0);
    let dx_t = act.dx_t().as_ptr().add(r0);
    let step = |b: usize, acc: v128| {
        let wb = w.add(b * Q4_BYTES);
        let qs = v128_load(wb.add(2) as *const v128);
        let isum_row = |r: usize| {
            let xb = x.add(r * row_bytes + b * Q8_BYTES);
            q4_0_block_isum(
                dot16,
                qs,
                v128_load(xb.add(2) as *const v128),
                v128_load(xb.add(18) as *const v128),
                c,
            )
        };
        let isum = i32x4_sub(
            hsum4_i16(isum_row(0), isum_row(1), isum_row(2), isum_row(3)),
            v128_load(sx8_t.add(b * rows) as *const v128),
        );
        let scale = f32x4_mul(
            v128_load32_splat(dw.add(b) as *const u32),
            v128_load(dx_t.add(b * rows) as *const v128),
        );
        f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)))
    };
    let sum = accumulate_blocks4(nb, step);
    *out = f32x4_extract_lane::<0>(sum);
    *out.add(stride) = f32x4_extract_lane::<1>(sum);
    *out.add(2 * stride) = f32x4_extract_lane::<2>(sum);
    *out.add(3 * stride) = f32x4_extract_lane::<3>(sum);
}

/// Four Q4_0 rows (`w`, `w + w_row`, …) against one prepared activation row: the activation
/// block is loaded once for all four, the four integer sums are transposed into one vector
/// (lane = weight row), and block `b` goes into accumulator `b % 4` — per output the order of
/// `q4_0_row1`. Writes `out[0..4]`.
///
/// # Safety
/// As `q4_0_row1` for four weight rows `w_row` bytes apart; `out` must hold 4 floats.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn q4_0_w4(
    dot16: impl Fn(v128, v128) -> v128 + Copy,
    w: *const u8,
    w_row: usize,
    nb: usize,
    x: *const u8,
    dx: *const f32,
    sx8: *const i32,
    out: *mut f32,
    c: &Consts,
) {
    let mut special = i32x4_splat(0);
    let mut step = |b: usize, acc: v128| {
        let xb = x.add(b * Q8_BYTES);
        let (x0, x1) = (
            v128_load(xb.add(2) as *const v128),
            v128_load(xb.add(18) as *const v128),
        );
        let wb = w.add(b * Q4_BYTES);
        let row = |k: usize| {
            let qs = v128_load(wb.add(k * w_row + 2) as *const v128);
            q4_0_block_isum(dot16, qs, x0, x1, c)
        };
        let isum = i32x4_sub(
            hsum4_i16(row(0), row(1), row(2), row(3)),
            i32x4_splat(*sx8.add(b)),
        );
        let scale = f32x4_mul(
            q4_0_scales4(wb, w_row, &mut special, c),
            f32x4_splat(*dx.add(b)),
        );
        f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)))
    };
    let sum = accumulate_blocks4(nb, &mut step);
    let twin = super::scalar::vec_dot_q4_0_q8_0;
    store_w4(
        sum,
        special,
        out,
        twin,
        w,
        w_row,
        nb * Q4_BYTES,
        nb * Q8_BYTES,
        x,
    );
}

/// Writes the four results of a four-weight-row kernel to `out[0..4]` — or, when a scale was
/// inf/NaN (a broken file), lets the scalar `twin` define all four.
///
/// # Safety
/// `w` must hold four rows of `w_bytes` bytes `w_row` apart, `x` `x_bytes` bytes, `out` 4 floats.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn store_w4(
    sum: v128,
    special: v128,
    out: *mut f32,
    twin: fn(&[u8], &[u8]) -> f32,
    w: *const u8,
    w_row: usize,
    w_bytes: usize,
    x_bytes: usize,
    x: *const u8,
) {
    if !v128_any_true(special) {
        return v128_store(out as *mut v128, sum);
    }
    let x = core::slice::from_raw_parts(x, x_bytes);
    for k in 0..4 {
        *out.add(k) = twin(core::slice::from_raw_parts(w.add(k * w_row), w_bytes), x);
    }
}

/// Tiled Q4_0 × prepared-Q8_0 matmul with a given `dot16`; see `scalar::gemm_q4_0_q8_0`.
#[inline(always)]
pub(crate) fn gemm_q4_0_with(
    dot16: impl Fn(v128, v128) -> v128 + Copy,
    w: &[u8],
    act: &Q8Act,
    out: &mut [f32],
) {
    let (rows, nb) = (act.rows(), act.blocks());
    if rows == 0 || nb == 0 {
        out.fill(0.0);
        return;
    }
    let w_row = nb * Q4_BYTES;
    // `out` is `[rows, stride]`; only the weight rows `w` holds are computed (as the twin does).
    let stride = out.len() / rows;
    let n_w = stride.min(w.len() / w_row);
    assert!(act.dx_t().len() >= rows * nb && act.sx8_t().len() >= rows * nb);
    let tiles = rows / 4 * 4;
    let c = Consts::new();
    let mut dw = Vec::new();
    if tiles > 0 {
        dw.resize(nb, 0.0f32);
    }
    for o in 0..n_w {
        if tiles == 0 {
            break;
        }
        let wr = &w[o * w_row..(o + 1) * w_row];
        for (d, wb) in dw.iter_mut().zip(wr.chunks_exact(Q4_BYTES)) {
            *d = read_f16(wb);
        }
        // SAFETY: row `o < n_w` lies inside `w` and `out`; `dw` holds `nb` scales; the activation
        // tables were sized by `Q8Act::prepare` for `rows × nb` (asserted above); v128 loads and
        // stores are unaligned.
        unsafe {
            let y = out.as_mut_ptr().add(o);
            let mut r = 0;
            while r < tiles {
                q4_0_row4(
                    dot16,
                    wr.as_ptr(),
                    nb,
                    act,
                    r,
                    y.add(r * stride),
                    stride,
                    dw.as_ptr(),
                    &c,
                );
                r += 4;
            }
        }
    }
    // Activation rows outside the 4-row tiles (all of them for a decode step): four weight rows
    // at a time (one activation load for four rows) while the rows fit in L2 — streaming a large
    // matrix from memory, one row at a time measured faster (the LM head: 12.6 vs 14.0 ms).
    let four_rows = n_w * w_row <= 1 << 20;
    for r in tiles..rows {
        let (x, dx, sx8) = (
            act.q8_row(r).as_ptr(),
            act.dx()[r * nb..].as_ptr(),
            act.sx8()[r * nb..].as_ptr(),
        );
        let y = &mut out[r * stride..r * stride + n_w];
        let mut o = 0;
        // SAFETY: weight rows `o..o + 4 <= n_w` lie inside `w`, `y` holds `n_w` floats, and the
        // activation row's tables hold `nb` blocks (asserted above).
        unsafe {
            while four_rows && o + 4 <= n_w {
                let wr = w.as_ptr().add(o * w_row);
                q4_0_w4(dot16, wr, w_row, nb, x, dx, sx8, y.as_mut_ptr().add(o), &c);
                o += 4;
            }
            while o < n_w {
                y[o] = q4_0_row1(dot16, w.as_ptr().add(o * w_row), nb, x, dx, sx8, &c);
                o += 1;
            }
        }
    }
}

/// `out[r·n_w + o] = w_o · x_r` (see `scalar::gemm_q4_0_q8_0`, whose bits this reproduces).
pub fn gemm_q4_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_q4_0_with(dot16_extmul, w, act, out)
}

/// One Q8_0 weight row against four prepared activation rows `r0..r0 + 4`: the weight block is
/// loaded once for all four, the four exact i32 block sums are transposed into one vector (lane
/// = row), and block `b` goes into accumulator `b % 4` — per output the order of
/// `scalar::vec_dot_q8_0_q8_0`.
///
/// # Safety
/// `w` must hold `nb` Q8_0 blocks and `dw` their scales as f32; rows `r0..r0 + 4` must exist
/// in `act`; the results go to `out`, `out + stride`, `out + 2·stride`, `out + 3·stride`.
#[inline(always)]
unsafe fn q8_0_row4(
    w: *const u8,
    nb: usize,
    act: &Q8Act,
    r0: usize,
    out: *mut f32,
    stride: usize,
    dw: *const f32,
) {
    let rows = act.rows();
    let row_bytes = nb * Q8_BYTES;
    let x = act.q8().as_ptr().add(r0 * row_bytes);
    let dx_t = act.dx_t().as_ptr().add(r0);
    let step = |b: usize, acc: v128| {
        let wb = w.add(b * Q8_BYTES);
        let (w0, w1) = (
            v128_load(wb.add(2) as *const v128),
            v128_load(wb.add(18) as *const v128),
        );
        let isum_row = |r: usize| {
            let xb = x.add(r * row_bytes + b * Q8_BYTES);
            i32x4_add(
                dot_i8x16(w0, v128_load(xb.add(2) as *const v128)),
                dot_i8x16(w1, v128_load(xb.add(18) as *const v128)),
            )
        };
        let isum = hsum4_i32(isum_row(0), isum_row(1), isum_row(2), isum_row(3));
        let scale = f32x4_mul(
            v128_load32_splat(dw.add(b) as *const u32),
            v128_load(dx_t.add(b * rows) as *const v128),
        );
        f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)))
    };
    let sum = accumulate_blocks4(nb, step);
    *out = f32x4_extract_lane::<0>(sum);
    *out.add(stride) = f32x4_extract_lane::<1>(sum);
    *out.add(2 * stride) = f32x4_extract_lane::<2>(sum);
    *out.add(3 * stride) = f32x4_extract_lane::<3>(sum);
}

/// `out[r·n_w + o] = w_o · x_r` for Q8_0 weight rows (see `scalar::gemm_q8_0_q8_0`, whose bits
/// this reproduces): activation rows in tiles of four per weight row, the rest one at a time.
pub fn gemm_q8_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    let nb = act.blocks();
    // SAFETY: `gemm_q8_0_with` passes a weight row of `nb` blocks inside `w` and an activation
    // row `r` of `act`, whose blocks and scales `q8_row` / `dx` hold.
    gemm_q8_0_with(w, act, out, |wr, r, c| unsafe {
        q8_0_row1(
            wr,
            nb,
            act.q8_row(r).as_ptr(),
            act.dx()[r * nb..].as_ptr(),
            c,
        )
    })
}

/// [`gemm_q8_0_q8_0`] with the one-row kernel of large matrices given: `row1(w, r, c)` is weight
/// row `w` (`act.blocks()` blocks) against activation row `r`, with [`q8_0_row1`]'s bits.
#[inline(always)]
pub(super) fn gemm_q8_0_with(
    w: &[u8],
    act: &Q8Act,
    out: &mut [f32],
    row1: impl Fn(*const u8, usize, &Consts) -> f32,
) {
    let (rows, nb) = (act.rows(), act.blocks());
    if rows == 0 || nb == 0 {
        out.fill(0.0);
        return;
    }
    let w_row = nb * Q8_BYTES;
    let stride = out.len() / rows;
    let n_w = stride.min(w.len() / w_row);
    assert!(act.dx_t().len() >= rows * nb);
    let tiles = rows / 4 * 4;
    let c = Consts::new();
    let mut dw = vec![0.0f32; if tiles > 0 { nb } else { 0 }];
    for o in 0..n_w {
        let wr = &w[o * w_row..(o + 1) * w_row];
        for (d, wb) in dw.iter_mut().zip(wr.chunks_exact(Q8_BYTES)) {
            *d = read_f16(wb);
        }
        let mut r = 0;
        while r < tiles {
            // SAFETY: row `o < n_w` lies inside `w` and column `o` inside `out` (`[rows,
            // stride]`); `dw` holds the row's `nb` scales; rows `r..r + 4 <= rows` exist and the
            // block-major scales were sized by `Q8Act::prepare` (asserted above).
            unsafe {
                q8_0_row4(
                    wr.as_ptr(),
                    nb,
                    act,
                    r,
                    out.as_mut_ptr().add(r * stride + o),
                    stride,
                    dw.as_ptr(),
                );
            }
            r += 4;
        }
    }
    // Activation rows outside the 4-row tiles (all of them for a decode step): four weight rows
    // at a time against one activation row while the rows fit in L2; a large matrix streams
    // faster one row at a time (the Q8_0 LM head of Gemma 3 Q4_K_M: 29.5 vs 21.7 tok/s decode).
    let four_rows = n_w * w_row <= 1 << 20;
    for r in tiles..rows {
        let (x, dx) = (act.q8_row(r), &act.dx()[r * nb..(r + 1) * nb]);
        let y = &mut out[r * stride..r * stride + n_w];
        let mut o = 0;
        while four_rows && o + 4 <= n_w {
            // SAFETY: weight rows `o..o + 4 <= n_w` lie inside `w`, `y` holds `n_w` floats, `x`
            // and `dx` hold the row's `nb` blocks and scales.
            unsafe {
                q8_0_w4(
                    w.as_ptr().add(o * w_row),
                    w_row,
                    nb,
                    x.as_ptr(),
                    dx.as_ptr(),
                    y.as_mut_ptr().add(o),
                    &c,
                )
            };
            o += 4;
        }
        for (k, yo) in y.iter_mut().enumerate().skip(o) {
            // SAFETY (for `row1`): row `k < n_w` lies inside `w`.
            *yo = row1(unsafe { w.as_ptr().add(k * w_row) }, r, &c);
        }
    }
}

/// One Q8_0 weight row against one prepared activation row (its scales `dx` already f32): the
/// order of `scalar::vec_dot_q8_0_q8_0`, lane `l` taking blocks `4k + l`; a row with an inf/NaN
/// weight scale goes to the twin.
///
/// # Safety
/// `w` must hold `nb` Q8_0 blocks, `x` `nb` Q8_0 blocks and `dx` their `nb` scales.
#[inline(always)]
unsafe fn q8_0_row1(w: *const u8, nb: usize, x: *const u8, dx: *const f32, c: &Consts) -> f32 {
    let block = |b: usize| {
        let (wb, xb) = (w.add(b * Q8_BYTES), x.add(b * Q8_BYTES));
        i32x4_add(
            dot_i8x16(
                v128_load(wb.add(2) as *const v128),
                v128_load(xb.add(2) as *const v128),
            ),
            dot_i8x16(
                v128_load(wb.add(18) as *const v128),
                v128_load(xb.add(18) as *const v128),
            ),
        )
    };
    q8_0_row1_with(block, w, nb, x, dx, c)
}

/// [`q8_0_row1`] with the exact block sums from `block(b)` (four i32 partials of block `b`).
///
/// # Safety
/// As [`q8_0_row1`].
#[inline(always)]
pub(super) unsafe fn q8_0_row1_with(
    block: impl Fn(usize) -> v128,
    w: *const u8,
    nb: usize,
    x: *const u8,
    dx: *const f32,
    c: &Consts,
) -> f32 {
    let mut acc = f32x4_splat(0.0);
    let mut special = i32x4_splat(0);
    let mut b = 0;
    while b + 4 <= nb {
        let isum = hsum4_i32(block(b), block(b + 1), block(b + 2), block(b + 3));
        let scale = f32x4_mul(
            q4_0_scales4(w.add(b * Q8_BYTES), Q8_BYTES, &mut special, c),
            v128_load(dx.add(b) as *const v128),
        );
        acc = f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)));
        b += 4;
    }
    let (ws, xs) = (
        core::slice::from_raw_parts(w, nb * Q8_BYTES),
        core::slice::from_raw_parts(x, nb * Q8_BYTES),
    );
    if v128_any_true(special) {
        return super::scalar::vec_dot_q8_0_q8_0(ws, xs);
    }
    let mut lanes = f32_lanes(acc);
    for (lane, b) in (b..nb).enumerate() {
        let v = block(b);
        let isum = i32x4_extract_lane::<0>(hsum4_i32(v, v, v, v));
        lanes[lane] += read_f16(&ws[b * Q8_BYTES..]) * *dx.add(b) * isum as f32;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// Four Q8_0 weight rows (`w`, `w + w_row`, …) against one prepared activation row: each
/// activation block is loaded once for the four, their exact block sums are transposed into one
/// vector (lane = weight row), and block `b` goes into accumulator `b % 4` — per output the order
/// of `scalar::vec_dot_q8_0_q8_0`. Writes `out[0..4]`; rows with an inf/NaN scale go to the
/// scalar twin.
///
/// # Safety
/// `w` must hold four rows of `nb` Q8_0 blocks `w_row` bytes apart, `x` `nb` Q8_0 blocks, `dx`
/// their `nb` scales as f32, and `out` 4 floats.
#[inline(always)]
unsafe fn q8_0_w4(
    w: *const u8,
    w_row: usize,
    nb: usize,
    x: *const u8,
    dx: *const f32,
    out: *mut f32,
    c: &Consts,
) {
    let mut special = i32x4_splat(0);
    let mut step = |b: usize, acc: v128| {
        let xb = x.add(b * Q8_BYTES);
        let (x0, x1) = (
            v128_load(xb.add(2) as *const v128),
            v128_load(xb.add(18) as *const v128),
        );
        let wb = w.add(b * Q8_BYTES);
        let row = |k: usize| {
            let p = wb.add(k * w_row);
            i32x4_add(
                dot_i8x16(v128_load(p.add(2) as *const v128), x0),
                dot_i8x16(v128_load(p.add(18) as *const v128), x1),
            )
        };
        let isum = hsum4_i32(row(0), row(1), row(2), row(3));
        let scale = f32x4_mul(
            q4_0_scales4(wb, w_row, &mut special, c),
            f32x4_splat(*dx.add(b)),
        );
        f32x4_add(acc, f32x4_mul(scale, f32x4_convert_i32x4(isum)))
    };
    let sum = accumulate_blocks4(nb, &mut step);
    let twin = super::scalar::vec_dot_q8_0_q8_0;
    store_w4(
        sum,
        special,
        out,
        twin,
        w,
        w_row,
        nb * Q8_BYTES,
        nb * Q8_BYTES,
        x,
    );
}

/// How one build's int8 GEMM multiplies sixteen weight bytes into an activation row: plain
/// SIMD128 reads the row's bytes, the relaxed build its sign-split halves (`x⁺` at `i`, `x⁻`
/// at `k + i`). Accumulators are pairs so both fit one tiling.
pub(crate) trait I8Dot {
    /// The activation row's vector(s) for bytes `i..i + 16`.
    ///
    /// # Safety
    /// The activation row at `x` must hold the bytes the build reads at `i`.
    unsafe fn load_x(&self, x: *const i8, i: usize) -> (v128, v128);
    /// Adds `wv · x` (as loaded by `load_x`) into `acc`.
    fn step(&self, acc: (v128, v128), wv: v128, xv: (v128, v128)) -> (v128, v128);
    /// The four partial sums of a finished accumulator.
    fn finish(&self, acc: (v128, v128)) -> v128;
    /// `w[i] · x[i]` for a tail byte.
    ///
    /// # Safety
    /// As for `load_x`, one byte.
    unsafe fn tail(&self, w: *const i8, x: *const i8, i: usize) -> i32;
}

/// The plain SIMD128 dot over the activation bytes themselves.
struct Plain;

impl I8Dot for Plain {
    #[inline(always)]
    unsafe fn load_x(&self, x: *const i8, i: usize) -> (v128, v128) {
        let v = v128_load(x.add(i) as *const v128);
        (v, v)
    }
    #[inline(always)]
    fn step(&self, acc: (v128, v128), wv: v128, xv: (v128, v128)) -> (v128, v128) {
        (i32x4_add(acc.0, dot_i8x16(wv, xv.0)), acc.1)
    }
    #[inline(always)]
    fn finish(&self, acc: (v128, v128)) -> v128 {
        acc.0
    }
    #[inline(always)]
    unsafe fn tail(&self, w: *const i8, x: *const i8, i: usize) -> i32 {
        *w.add(i) as i32 * *x.add(i) as i32
    }
}

/// `gemm_i8` (see the scalar twin; same integers): four activation rows against one weight row
/// per tile when there are at least four rows, else four weight rows against one activation row.
pub fn gemm_i8(x: &[i8], k: usize, w: &[i8], w_row: usize, out: &mut [i32]) {
    if k == 0 {
        out.fill(0);
        return;
    }
    let m = x.len() / k;
    gemm_i8_with(&Plain, x, k, m, k, w, w_row, out)
}

/// The tiling of `gemm_i8` around a build's [`I8Dot`]: `m` activation rows `x_row` bytes
/// apart (the relaxed build passes its sign-split rows, `2k` bytes each), `k` weights per row.
/// Each tile walks `k` once for four dots that share one row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_i8_with<D: I8Dot>(
    d: &D,
    x: &[i8],
    x_row: usize,
    m: usize,
    k: usize,
    w: &[i8],
    w_row: usize,
    out: &mut [i32],
) {
    let n = out.len() / m.max(1);
    if k == 0 || m == 0 || n == 0 {
        out.iter_mut().for_each(|v| *v = 0);
        return;
    }
    assert!(x.len() >= (m - 1) * x_row + k && w.len() >= (n - 1) * w_row + k && w_row >= k);
    let body = k / 16 * 16;
    let zero = (i32x4_splat(0), i32x4_splat(0));
    // SAFETY (every pointer below): rows r < m of x and o < n of w lie inside the slices, as the
    // assert above checks, and each dot reads its row's k bytes (the dot's own layout).
    let sums = |acc: [(v128, v128); 4], ws: [*const i8; 4], xs: [*const i8; 4]| -> [i32; 4] {
        let v = hsum4_i32(
            d.finish(acc[0]),
            d.finish(acc[1]),
            d.finish(acc[2]),
            d.finish(acc[3]),
        );
        let lanes = i32_lanes(v);
        let mut out = [0; 4];
        for j in 0..4 {
            out[j] = lanes[j]
                + (body..k)
                    .map(|i| unsafe { d.tail(ws[j], xs[j], i) })
                    .sum::<i32>();
        }
        out
    };
    // One weight row against four activation rows: each weight vector loaded once.
    let w_shared = |wo: *const i8, xs: [*const i8; 4]| {
        let mut acc = [zero; 4];
        for i in (0..body).step_by(16) {
            let wv = unsafe { v128_load(wo.add(i) as *const v128) };
            for j in 0..4 {
                acc[j] = d.step(acc[j], wv, unsafe { d.load_x(xs[j], i) });
            }
        }
        sums(acc, [wo; 4], xs)
    };
    // Four weight rows against one activation row: each activation vector loaded once.
    let x_shared = |ws: [*const i8; 4], xr: *const i8| {
        let mut acc = [zero; 4];
        for i in (0..body).step_by(16) {
            let xv = unsafe { d.load_x(xr, i) };
            for j in 0..4 {
                acc[j] = d.step(
                    acc[j],
                    unsafe { v128_load(ws[j].add(i) as *const v128) },
                    xv,
                );
            }
        }
        sums(acc, ws, [xr; 4])
    };
    let one = |wo: *const i8, xr: *const i8| {
        let mut acc = zero;
        for i in (0..body).step_by(16) {
            acc = d.step(
                acc,
                unsafe { v128_load(wo.add(i) as *const v128) },
                unsafe { d.load_x(xr, i) },
            );
        }
        let v = d.finish(acc);
        i32x4_extract_lane::<0>(hsum4_i32(v, v, v, v))
            + (body..k).map(|i| unsafe { d.tail(wo, xr, i) }).sum::<i32>()
    };
    let (xp, wp) = (x.as_ptr(), w.as_ptr());
    let xrow = |r: usize| unsafe { xp.add(r * x_row) };
    let wrow = |o: usize| unsafe { wp.add(o * w_row) };
    if m >= 4 {
        for o in 0..n {
            let mut r = 0;
            while r + 4 <= m {
                let s = w_shared(wrow(o), [xrow(r), xrow(r + 1), xrow(r + 2), xrow(r + 3)]);
                for (i, v) in s.into_iter().enumerate() {
                    out[(r + i) * n + o] = v;
                }
                r += 4;
            }
            for r in r..m {
                out[r * n + o] = one(wrow(o), xrow(r));
            }
        }
    } else {
        for r in 0..m {
            let mut o = 0;
            while o + 4 <= n {
                let s = x_shared([wrow(o), wrow(o + 1), wrow(o + 2), wrow(o + 3)], xrow(r));
                out[r * n + o..r * n + o + 4].copy_from_slice(&s);
                o += 4;
            }
            for o in o..n {
                out[r * n + o] = one(wrow(o), xrow(r));
            }
        }
    }
}
