//! Walking strided data: the odometer row loop and the coalesced, blocked copy.
//!
//! Every op that reads a view goes through [`for_each_row`]; every materialising copy goes
//! through [`copy_strided`]. Keeping both here means there is one place to get index maths
//! right and one place to make fast.

use crate::parallel;

/// Copies of at least this many elements (and at least two blocks) are split over threads.
pub const PARALLEL_COPY_MIN_ELEMS: usize = 1 << 16;

/// Calls `f(offsets, n, inner_strides)` once per innermost row of a strided walk over `dims`.
///
/// `strides[k]` and `start[k]` describe operand `k`; `offsets[k]` is where the row starts in
/// operand `k` and `inner_strides[k]` is its step along the row. The outer axes advance like an
/// odometer (add the stride; on wrap subtract `stride * size` and carry), so there is no division
/// or modulo per element. A rank-0 shape is one row of one element; any zero-sized axis means no
/// calls at all.
pub fn for_each_row<const N: usize>(
    dims: &[usize],
    strides: [&[usize]; N],
    start: [usize; N],
    mut f: impl FnMut([usize; N], usize, [usize; N]),
) {
    if dims.contains(&0) {
        return;
    }
    let rank = dims.len();
    if rank == 0 {
        f(start, 1, [0; N]);
        return;
    }
    let inner = dims[rank - 1];
    let inner_strides: [usize; N] = std::array::from_fn(|k| strides[k][rank - 1]);
    let outer = &dims[..rank - 1];
    let mut idx = vec![0usize; outer.len()];
    let mut off = start;
    loop {
        f(off, inner, inner_strides);
        let mut ax = outer.len();
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            for k in 0..N {
                off[k] = off[k].wrapping_add(strides[k][ax]);
            }
            if idx[ax] < outer[ax] {
                break;
            }
            for k in 0..N {
                off[k] = off[k].wrapping_sub(strides[k][ax] * outer[ax]);
            }
            idx[ax] = 0;
        }
    }
}

/// Drops size-1 axes and merges neighbouring axes that every operand steps through as one
/// (`stride[i] == stride[i + 1] * dims[i + 1]`), so most views shrink to one to three axes.
pub fn coalesce_axes<const N: usize>(
    dims: &[usize],
    strides: [&[usize]; N],
) -> (Vec<usize>, [Vec<usize>; N]) {
    let mut out_dims: Vec<usize> = Vec::with_capacity(dims.len());
    let mut out_strides: [Vec<usize>; N] = std::array::from_fn(|_| Vec::with_capacity(dims.len()));
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        if let Some(&last) = out_dims.last() {
            let mergeable = (0..N).all(|k| *out_strides[k].last().unwrap() == strides[k][i] * d);
            if mergeable {
                *out_dims.last_mut().unwrap() = last * d;
                for (k, s) in out_strides.iter_mut().enumerate() {
                    *s.last_mut().unwrap() = strides[k][i];
                }
                continue;
            }
        }
        out_dims.push(d);
        for (k, s) in out_strides.iter_mut().enumerate() {
            s.push(strides[k][i]);
        }
    }
    (out_dims, out_strides)
}

/// Copies the view (`src`, `src_offset`, `dims`, `src_strides`) into `dst`, which is contiguous
/// row-major with exactly `dims`' element count.
///
/// After coalescing, the inner two axes are copied as one block per outer index: each row is a
/// `copy_from_slice` when the source row is contiguous, a `fill` when its stride is 0 (a
/// broadcast), and a strided loop otherwise. Large copies split the blocks over threads; each
/// destination element is written by exactly one thread.
pub fn copy_strided<T: Copy + Send + Sync>(
    src: &[T],
    src_offset: usize,
    dims: &[usize],
    src_strides: &[usize],
    dst: &mut [T],
) {
    if dst.is_empty() {
        return;
    }
    let canonical = crate::Shape::from(dims).strides();
    let (cdims, [_, sstr]) = coalesce_axes(dims, [&canonical, src_strides]);
    let rank = cdims.len();
    if rank == 0 {
        dst[0] = src[src_offset];
        return;
    }
    if rank == 1 && sstr[0] == 1 {
        dst.copy_from_slice(&src[src_offset..src_offset + cdims[0]]);
        return;
    }
    // Inner block: `rows` x `cols`; the rest are outer axes walked block by block.
    let cols = cdims[rank - 1];
    let col_stride = sstr[rank - 1];
    let (rows, row_stride, n_outer) = if rank >= 2 {
        (cdims[rank - 2], sstr[rank - 2], rank - 2)
    } else {
        (1, 0, 0)
    };
    let outer_dims = &cdims[..n_outer];
    let outer_strides = &sstr[..n_outer];
    let block = rows * cols;
    let n_blocks = dst.len() / block;

    let blocks_per_chunk = if dst.len() >= PARALLEL_COPY_MIN_ELEMS && n_blocks >= 2 {
        n_blocks.div_ceil(parallel::num_threads() * 4).max(1)
    } else {
        n_blocks
    };

    parallel::for_each_chunk_mut(dst, blocks_per_chunk * block, |chunk_idx, out| {
        let first = chunk_idx * blocks_per_chunk;
        // Decompose the first block index once, then advance like an odometer.
        let mut idx = vec![0usize; n_outer];
        let mut off = src_offset;
        let mut rem = first;
        for ax in (0..n_outer).rev() {
            idx[ax] = rem % outer_dims[ax];
            rem /= outer_dims[ax];
            off += idx[ax] * outer_strides[ax];
        }
        for out_block in out.chunks_exact_mut(block) {
            copy_block(src, off, rows, cols, row_stride, col_stride, out_block);
            for ax in (0..n_outer).rev() {
                idx[ax] += 1;
                off += outer_strides[ax];
                if idx[ax] < outer_dims[ax] {
                    break;
                }
                off -= outer_strides[ax] * outer_dims[ax];
                idx[ax] = 0;
            }
        }
    });
}

fn copy_block<T: Copy>(
    src: &[T],
    off: usize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
    out: &mut [T],
) {
    if col_stride > 1 && rows > 1 {
        return copy_block_tiled(src, off, rows, cols, row_stride, col_stride, out);
    }
    for (r, out_row) in out.chunks_exact_mut(cols).enumerate().take(rows) {
        let start = off + r * row_stride;
        match col_stride {
            1 => out_row.copy_from_slice(&src[start..start + cols]),
            0 => out_row.fill(src[start]),
            s => {
                for (j, o) in out_row.iter_mut().enumerate() {
                    *o = src[start + j * s];
                }
            }
        }
    }
}

/// Tile edge for strided blocks: a 32×32 f32 tile reads 32 short runs and writes 32, so both
/// sides stay in L1 (a plain row-by-row transpose misses the cache on every source read).
const TILE: usize = 32;

/// A strided block copied tile by tile: the same element mapping as the row loop above.
fn copy_block_tiled<T: Copy>(
    src: &[T],
    off: usize,
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
    out: &mut [T],
) {
    for r0 in (0..rows).step_by(TILE) {
        let r1 = (r0 + TILE).min(rows);
        for c0 in (0..cols).step_by(TILE) {
            let c1 = (c0 + TILE).min(cols);
            for c in c0..c1 {
                let base = off + c * col_stride;
                for r in r0..r1 {
                    out[r * cols + c] = src[base + r * row_stride];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn coalesce_merges_contiguous_and_drops_ones() {
        let dims = [2, 1, 3, 4];
        let s = crate::Shape::from(dims).strides();
        let (d, [a]) = coalesce_axes(&dims, [&s]);
        assert_eq!(d, vec![24]);
        assert_eq!(a, vec![1]);
        // A transposed [3, 4] -> [4, 3] view cannot merge.
        let (d, [a]) = coalesce_axes(&[4, 3], [&[1, 4]]);
        assert_eq!(d, vec![4, 3]);
        assert_eq!(a, vec![1, 4]);
    }

    #[test]
    fn row_loop_visits_rows_in_order() {
        let mut seen = Vec::new();
        for_each_row(&[2, 3, 2], [&[1, 2, 6]], [0], |[o], n, [s]| {
            for j in 0..n {
                seen.push(o + j * s);
            }
        });
        // Index-by-index: element (a, b, c) sits at a*1 + b*2 + c*6.
        let mut want = Vec::new();
        for a in 0..2 {
            for b in 0..3 {
                for c in 0..2 {
                    want.push(a + b * 2 + c * 6);
                }
            }
        }
        assert_eq!(seen, want);
    }

    #[test]
    fn row_loop_rank0_and_empty() {
        let mut calls = 0;
        for_each_row::<1>(&[], [&[]], [5], |[o], n, _| {
            assert_eq!((o, n), (5, 1));
            calls += 1;
        });
        assert_eq!(calls, 1);
        for_each_row(&[3, 0, 2], [&[0, 0, 0]], [0], |_, _, _| calls += 1);
        assert_eq!(calls, 1);
    }
}
