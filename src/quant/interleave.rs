//! Q4_0, Q5_0, Q8_0, Q4_K, Q5_K and Q6_K rows interleaved four at a time ("×4"): the layout
//! SIMD builds put a model's matrices of those formats in at load, in place ([`fast`]).
//!
//! A relaxed `i8×i7` dot multiplies bytes pairwise and sums neighbours within each lane. If the
//! bytes of lane `i` come from weight row `i` and the activation's four bytes are splat over all
//! lanes, one instruction advances four rows' dots at once and leaves them in separate lanes: no
//! horizontal sums, no transposes. (The kernel uses the i16-pair form and widens once per block:
//! in Chromium on this machine it measured faster than the accumulating i32 form, decode 91 →
//! 106 tok/s.) Q8_0's quants are signed on both sides, so there each vector is widened to i16
//! (rows 0–1, rows 2–3) and multiplied by the activation's widened word, splat the same way
//! (`i32x4_dot_i16x8`); SIMD128 builds, which have no relaxed dot, widen Q4_0 and Q5_0 nibbles
//! so too (`kernels::x4`). ggml's `q4_0_4x4` repack is the native analogue.
//!
//! Layout: rows `4g..4g + 4` form group `g`, which takes the same bytes as those four rows did
//! (`4 · nb · block_bytes`, `nb` blocks a row). For each block `b` of the group:
//! - `d[4]`: the four rows' f16 scales, row order;
//! - `v[c][16]`: `v[k][4i + m] = qs_i[4k + m]`, the quant bytes of row `i`, four at a time:
//!   `c = 4` for Q4_0 and Q5_0, whose bytes keep the nibble pair (low nibble element `j`, high
//!   nibble element `j + 16`), `c = 8` for Q8_0 (one byte an element);
//! - Q5_0 only, `h[16]`: the fifth bits as bit planes over `v`'s lanes. Bit `2k + t` of byte
//!   `4i + m` is the fifth bit of the element that lane's nibble in `v[k]` holds: `4k + m` of
//!   row `i` for the low nibble (`t = 0`), `16 + 4k + m` for the high (`t = 1`). So one
//!   16-bit shift and one mask put plane `2k + t`'s bits at value 16 in every byte, ready to
//!   add to the nibbles.
//!
//! Q4_K super-blocks (256 elements) keep every field, regrouped so that a field of the four rows
//! is one vector:
//! - `d[4]`, then `dmin[4]`: f16, row order;
//! - `s[3][16]`: `s[w][4i..4i + 4]` = row `i`'s packed scale bytes `4w..4w + 4`, so the 6-bit
//!   unpacking (`kquants::scales_mins_k4`) runs on the four rows at once, a row a lane;
//! - `v[32][16]` at [`Q4_K_QS`], as Q4_0's: `v[k][4i + m] = qs_i[4k + m]`. Chunk `c` = `v[8c..8c
//!   + 8]` holds sub-block `2c` in its low nibbles and `2c + 1` in its high ones.
//!
//! Q5_K: Q4_K's first three fields, then its fifth bits `h[8][16]` at [`Q5_K_QH`] (`h[k][4i + m]
//! = qh_i[4k + m]`: bit `j` of byte `4i + m` of `h[k]` is the fifth bit of sub-block `j`'s
//! element in lane `4i + m` of `v[8⌊j/2⌋ + k]`), then `v` at [`Q5_K_QS`].
//!
//! Q6_K super-blocks likewise: `d[4]`; `s[4][16]` at [`Q6_K_SCALES`], `s[t][4i..4i + 4]` = row
//! `i`'s scales `4t..4t + 4` (i8); `ql[32][16]` at [`Q6_K_QL`] and `qh[16][16]` at [`Q6_K_QH`],
//! four bytes of each row a vector as above.
//!
//! The kernels keep each format's f32 order per output (block `b` into accumulator `b % 4`; the
//! K formats' one accumulator in super-block order), so an interleaved matrix gives the same bits
//! as its rows in the file's layout. They read the f16 scales without checking for inf/NaN, so a
//! matrix with such a scale is not interleaved ([`interleave`] returns false).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::parallel;
use crate::storage::{try_vec, try_with_capacity};
use half::f16;
use std::ops::Range;
use std::sync::Mutex;

/// Rows per group.
pub const GROUP: usize = 4;

/// Offset of the quant bytes `v` in a group block (after the four scales).
pub const QS: usize = 2 * GROUP;

/// Offset of the Q5_0 fifth-bit masks `h` in a group block (after `v`).
pub const Q5_HIGH: usize = QS + 64;

/// Offset of the four rows' `dmin` in a Q4_K group block (after `d`).
pub const Q4_K_DMIN: usize = 2 * GROUP;

/// Offset of the Q4_K packed scales `s` in a group block (after `dmin`).
pub const Q4_K_SCALES: usize = 4 * GROUP;

/// Offset of the Q4_K quant bytes `v` in a group block (after the scales).
pub const Q4_K_QS: usize = Q4_K_SCALES + 48;

/// Offset of the Q5_K fifth bits `h` in a group block (after the scales).
pub const Q5_K_QH: usize = Q4_K_QS;

/// Offset of the Q5_K quant bytes `v` in a group block (after `h`).
pub const Q5_K_QS: usize = Q5_K_QH + 128;

/// Offset of the Q6_K scales `s` in a group block (after `d`).
pub const Q6_K_SCALES: usize = 2 * GROUP;

/// Offset of the Q6_K low nibble bytes `ql` in a group block (after the scales).
pub const Q6_K_QL: usize = Q6_K_SCALES + 64;

/// Offset of the Q6_K high bit pairs `qh` in a group block (after `ql`).
pub const Q6_K_QH: usize = Q6_K_QL + 512;

/// Whether this build interleaves `dtype`'s matrices at load: every format above in SIMD builds,
/// whose ×4 dots (`kernels::x4`, `kernels::kx4`) beat the file layout's. Elsewhere the layout
/// only exists in tests.
pub fn fast(dtype: DType) -> bool {
    cfg!(all(target_arch = "wasm32", target_feature = "simd128")) && supports(dtype)
}

/// Whether `dtype` has a ×4 layout.
pub fn supports(dtype: DType) -> bool {
    !fields(dtype).is_empty()
}

/// Bytes of one block of a group of `dtype` rows (four rows' blocks).
pub const fn group_block(dtype: DType) -> usize {
    GROUP * dtype.block_bytes()
}

/// Interleaves `rows` (whole `dtype` rows of `nb` blocks each, a multiple of [`GROUP`] of them)
/// in place, and returns true; returns false, the rows untouched, when one of their f16 scales is
/// inf/NaN ([`scales_finite`]). Runs of groups go to the threads, each with a four-row buffer of
/// its own. Errors when `dtype` has no ×4 layout, the length is not whole groups, or the buffers
/// cannot be had.
pub fn interleave(dtype: DType, rows: &mut [u8], nb: usize) -> Result<bool> {
    // One copy of the work per format, so that its runs' offsets and lengths are constants. With
    // the runs looked up as the loops went, interleaving took 349–453 ms of the ~410 that Gemma 3
    // 270M Q4_0's model took to build in Chromium after its download, 49 ms so (the Q4_K_M
    // file: 576–1,047 ms, 101–125 so, with `planes_byte`).
    match dtype {
        DType::Q4_0 => interleave_as::<{ DType::Q4_0 as u8 }>(rows, nb),
        DType::Q5_0 => interleave_as::<{ DType::Q5_0 as u8 }>(rows, nb),
        DType::Q8_0 => interleave_as::<{ DType::Q8_0 as u8 }>(rows, nb),
        DType::Q4_K => interleave_as::<{ DType::Q4_K as u8 }>(rows, nb),
        DType::Q5_K => interleave_as::<{ DType::Q5_K as u8 }>(rows, nb),
        DType::Q6_K => interleave_as::<{ DType::Q6_K as u8 }>(rows, nb),
        _ => Err(Error::UnsupportedDType {
            op: "interleave",
            dtype,
        }),
    }
}

/// The format whose discriminant is `T`: a constant wherever [`interleave_as`] runs, in the
/// closures that its threads call too (a captured `DType` would be a variable there, and the
/// loops ran 4× slower, measured in Node's V8).
#[inline(always)]
fn format<const T: u8>() -> DType {
    DType::ALL[T as usize]
}

// `format` indexes `DType::ALL` by discriminant.
const _: () = {
    let mut i = 0;
    while i < DType::ALL.len() {
        assert!(DType::ALL[i] as usize == i);
        i += 1;
    }
};

/// [`interleave`] for the format `T`, its [`fields`] constants: a check of every scale, then
/// the packing, each over runs of whole groups, a few a thread (the work is the same
/// everywhere, byte for byte), the packing through a four-row buffer per thread. Building Gemma 3
/// 270M's model after its download took 85 ms instead of 109 on two threads, 80 instead of 104
/// on one (shorter calls reach V8's optimised tier sooner), and 108 instead of 159 for the
/// Q4_K_M file on two (medians of three to five fresh Chromium engines).
fn interleave_as<const T: u8>(rows: &mut [u8], nb: usize) -> Result<bool> {
    let group = check_groups(format::<T>(), rows.len(), nb)?;
    let groups = rows.len() / group;
    let runs = (4 * parallel::num_threads()).min(groups).max(1);
    let per = groups.div_ceil(runs).max(1) * group;
    // One flag a run, a byte rather than a bool: the parallel loops over `u8` exist already, and
    // each new element type brings a copy of their code (and rayon's) into the wasm.
    let mut finite = try_vec(rows.len().div_ceil(per), 1u8)?;
    let view: &[u8] = rows;
    parallel::for_each_chunk_mut(&mut finite, 1, |c, f| {
        let run = &view[c * per..view.len().min((c + 1) * per)];
        f[0] = u8::from(scales_finite(format::<T>(), fields(format::<T>()), run));
    });
    if finite.contains(&0) {
        return Ok(false);
    }
    let slots = parallel::num_threads() + 1; // `thread_slot` is below this
    let mut buffers = try_with_capacity(slots)?;
    for _ in 0..slots {
        buffers.push(Mutex::new(try_vec(group, 0u8)?));
    }
    parallel::for_each_chunk_mut(rows, per, |_, run| {
        let slot = parallel::thread_slot().min(buffers.len() - 1);
        let mut tmp = buffers[slot].lock().unwrap_or_else(|e| e.into_inner());
        pack_groups(format::<T>(), fields(format::<T>()), run, nb, &mut tmp);
    });
    Ok(true)
}

/// Interleaves each group of `rows` (`tmp.len()` bytes) in place through `tmp`, with `dtype`'s
/// `fields`.
#[inline(always)]
fn pack_groups(dtype: DType, fields: &[Field], rows: &mut [u8], nb: usize, tmp: &mut [u8]) {
    let (bb, row) = (dtype.block_bytes(), nb * dtype.block_bytes());
    for g in rows.chunks_exact_mut(tmp.len()) {
        tmp.copy_from_slice(g);
        for (b, out) in g.chunks_exact_mut(GROUP * bb).enumerate() {
            let src: [&[u8]; GROUP] = core::array::from_fn(|i| &tmp[i * row + b * bb..][..bb]);
            pack_block(dtype, fields, src, out);
        }
    }
}

/// Whether every f16 scale of `rows` (a block's two-byte runs in `fields`: `d`, and the K
/// formats' `dmin`) is finite. The ×4 kernels convert scales without the per-block inf/NaN check
/// that the file layout's kernels make (a tenth of a Q4_0 matvec's instructions), so a broken
/// file's matrix stays in that layout and its NaN still comes out.
#[inline(always)]
fn scales_finite(dtype: DType, fields: &[Field], rows: &[u8]) -> bool {
    let finite = |b: &[u8], at: usize| f16::from_le_bytes([b[at], b[at + 1]]).is_finite();
    rows.chunks_exact(dtype.block_bytes())
        .all(|b| fields.iter().all(|f| f.n != 2 || finite(b, f.file)))
}

/// Rows `rows` of an interleaved `dtype` `matrix` (from its first group) of `nb`-block rows, in
/// the file's layout, into `out` (`rows.len() · nb · block_bytes` bytes). Rows past the matrix
/// are left, and so is all of `out` for a `dtype` without a ×4 layout (whose blocks may be
/// shorter than the offsets read here).
pub fn deinterleave_rows(
    dtype: DType,
    matrix: &[u8],
    nb: usize,
    rows: Range<usize>,
    out: &mut [u8],
) {
    if !supports(dtype) {
        return;
    }
    let (bb, gb) = (dtype.block_bytes(), group_block(dtype));
    let group = nb * gb;
    for (r, dst) in rows.zip(out.chunks_exact_mut(nb * bb)) {
        let Some(g) = matrix.get(r / GROUP * group..(r / GROUP + 1) * group) else {
            return;
        };
        for (blk, dst) in g.chunks_exact(gb).zip(dst.chunks_exact_mut(bb)) {
            unpack_block(dtype, blk, r % GROUP, dst);
        }
    }
}

/// A run of a block's bytes: `n` bytes of row `i` at `file` in its block go to `group + n · i` in
/// the group block, repeated `times` times (at `file + n · k` and `group + 16 · k`).
#[derive(Clone, Copy)]
struct Field {
    file: usize,
    group: usize,
    n: usize,
    times: usize,
}

const fn field(file: usize, group: usize, n: usize, times: usize) -> Field {
    Field {
        file,
        group,
        n,
        times,
    }
}

impl Field {
    /// Repeat `k` of row `lane`'s run: its byte offsets in a block and in a group block.
    #[inline(always)]
    fn at(&self, k: usize, lane: usize) -> (usize, usize) {
        (self.file + self.n * k, self.group + 16 * k + self.n * lane)
    }
}

/// `dtype`'s group block as runs of its rows' bytes (empty: no ×4 layout). Q5_0's bit planes
/// are not a plain run ([`pack_block`] builds them).
#[inline(always)]
fn fields(dtype: DType) -> &'static [Field] {
    const Q4_0: [Field; 2] = [field(0, 0, 2, 1), field(2, QS, 4, 4)];
    const Q5_0: [Field; 2] = [field(0, 0, 2, 1), field(6, QS, 4, 4)];
    const Q8_0: [Field; 2] = [field(0, 0, 2, 1), field(2, QS, 4, 8)];
    const Q4_K: [Field; 4] = [
        field(0, 0, 2, 1),
        field(2, Q4_K_DMIN, 2, 1),
        field(4, Q4_K_SCALES, 4, 3),
        field(16, Q4_K_QS, 4, 32),
    ];
    const Q5_K: [Field; 5] = [
        field(0, 0, 2, 1),
        field(2, Q4_K_DMIN, 2, 1),
        field(4, Q4_K_SCALES, 4, 3),
        field(16, Q5_K_QH, 4, 8),
        field(48, Q5_K_QS, 4, 32),
    ];
    const Q6_K: [Field; 4] = [
        field(208, 0, 2, 1),
        field(192, Q6_K_SCALES, 4, 4),
        field(0, Q6_K_QL, 4, 32),
        field(128, Q6_K_QH, 4, 16),
    ];
    match dtype {
        DType::Q4_0 => &Q4_0,
        DType::Q5_0 => &Q5_0,
        DType::Q8_0 => &Q8_0,
        DType::Q4_K => &Q4_K,
        DType::Q5_K => &Q5_K,
        DType::Q6_K => &Q6_K,
        _ => &[],
    }
}

/// The `(file, group)` byte offsets of row `lane`'s runs in a block and a group block.
fn runs(dtype: DType, lane: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    fields(dtype).iter().flat_map(move |f| {
        (0..f.times).map(move |k| {
            let (file, group) = f.at(k, lane);
            (file, group, f.n)
        })
    })
}

/// One group block `out` from the same block of four rows in the file's layout, by `dtype`'s
/// `fields`.
#[inline(always)]
fn pack_block(dtype: DType, fields: &[Field], src: [&[u8]; GROUP], out: &mut [u8]) {
    for f in fields {
        for k in 0..f.times {
            for (i, s) in src.iter().enumerate() {
                let (from, to) = f.at(k, i);
                out[to..to + f.n].copy_from_slice(&s[from..from + f.n]);
            }
        }
    }
    if dtype == DType::Q5_0 {
        let qh = src.map(|s| u32::from_le_bytes([s[2], s[3], s[4], s[5]]));
        for (lane, byte) in out[Q5_HIGH..Q5_HIGH + 16].iter_mut().enumerate() {
            *byte = planes_byte(qh[lane / 4], lane % 4);
        }
    }
}

/// Byte `4i + m` of the Q5_0 bit planes from row `i`'s fifth bits `h`: bit `plane` is bit
/// [`fifth_bit`]`(plane, m)` of `h`, that is `16t + 4k + m` for plane `2k + t`, gathered by
/// shifts and masks (a bit at a time, they took about a quarter of the Q4_K_M file's
/// interleaving in Chromium).
fn planes_byte(h: u32, m: usize) -> u8 {
    let x = h >> m;
    // plane 2k at bit 4k, plane 2k + 1 at bit 4k + 1
    let pairs = (x & 0x1111) | ((x >> 15) & 0x2222);
    // planes 0–3 at bits 0–3, planes 4–7 at bits 8–11
    let quads = (pairs | (pairs >> 2)) & 0x0F0F;
    (quads | (quads >> 4)) as u8
}

/// Which bit of a row's `qh` bit plane `plane` holds in lane `4i + m` (see the module docs).
fn fifth_bit(plane: usize, m: usize) -> usize {
    let (k, high) = (plane / 2, plane % 2);
    16 * high + 4 * k + m
}

/// Row `lane`'s block in the file's layout, from one group block.
fn unpack_block(dtype: DType, blk: &[u8], lane: usize, dst: &mut [u8]) {
    for (file, group, n) in runs(dtype, lane) {
        dst[file..file + n].copy_from_slice(&blk[group..group + n]);
    }
    if dtype == DType::Q5_0 {
        let mut qh = 0u32;
        for m in 0..4 {
            let byte = blk[Q5_HIGH + 4 * lane + m];
            for plane in 0..8 {
                qh |= (((byte >> plane) & 1) as u32) << fifth_bit(plane, m);
            }
        }
        dst[2..6].copy_from_slice(&qh.to_le_bytes());
    }
}

/// Bytes per group of `nb`-block rows of `dtype` (a ×4 format), when `len` is a whole number of
/// groups.
fn check_groups(dtype: DType, len: usize, nb: usize) -> Result<usize> {
    let group = nb
        .checked_mul(group_block(dtype))
        .ok_or_else(|| Error::overflow("×4 group", &[nb, group_block(dtype)]))?;
    if group == 0 || len % group != 0 {
        return Err(Error::shape(
            "interleave",
            format!("whole groups of {GROUP} rows of {nb} {dtype} blocks"),
            format!("{len} bytes"),
        ));
    }
    Ok(group)
}

#[cfg(test)]
mod tests {
    use super::{fifth_bit, planes_byte};

    /// The gathered byte against the planes' definition, one bit at a time.
    #[test]
    fn planes_byte_takes_each_planes_fifth_bit() {
        let mut h = 0x9E37_79B9u32;
        for _ in 0..1000 {
            h = h.rotate_left(5) ^ h.wrapping_mul(0x85EB_CA6B);
            for m in 0..4 {
                let want = (0..8).fold(0u8, |acc, plane| {
                    acc | ((((h >> fifth_bit(plane, m)) & 1) as u8) << plane)
                });
                assert_eq!(planes_byte(h, m), want, "h {h:#x}, m {m}");
            }
        }
    }
}
