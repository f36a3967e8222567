//! Batched f32 matmul with broadcast batch dimensions.

use super::kernels;
use crate::error::{Error, Result};

/// Column and depth tiles of the blocked loop: a 64 × 256 f32 panel of `rhs` is 64 KiB.
const N_TILE: usize = 256;
const K_TILE: usize = 64;
use crate::storage::try_vec;
use crate::strided::for_each_row;
use crate::{Shape, Tensor};

impl Tensor {
    /// `[..batch, m, k] @ [..batch, k, n] -> [..batch, m, n]`; batch dims broadcast (so one
    /// `[k, n]` weight multiplies a `[b, m, k]` activation without replication).
    ///
    /// Each output element accumulates `a[i, p] * b[p, j]` in f32 for `p = 0..k` in order, as the
    /// textbook triple loop does; the loop nest is i-p-j (tiled) so the inner loop is an axpy
    /// over a row of `rhs`.
    ///
    /// Errors: [`Error::ShapeMismatch`] for rank < 2 or differing `k`,
    /// [`Error::NotBroadcastable`] for incompatible batch dims.
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        const OP: &str = "matmul";
        let a = self.f32_storage(OP)?;
        let b = rhs.f32_storage(OP)?;
        if self.rank() < 2 || rhs.rank() < 2 {
            return Err(Error::shape(
                OP,
                "two operands of rank >= 2",
                format!("{} @ {}", self.shape(), rhs.shape()),
            ));
        }
        let (ra, rb) = (self.rank(), rhs.rank());
        let (m, k) = (self.dims()[ra - 2], self.dims()[ra - 1]);
        let (k2, n) = (rhs.dims()[rb - 2], rhs.dims()[rb - 1]);
        if k != k2 {
            return Err(Error::shape(
                OP,
                format!("[.., {m}, {k}] @ [.., {k}, n]"),
                format!("{} @ {}", self.shape(), rhs.shape()),
            ));
        }
        let batch_a = Shape::from(&self.dims()[..ra - 2]);
        let batch_b = Shape::from(&rhs.dims()[..rb - 2]);
        let batch = batch_a.broadcast(&batch_b)?;
        let sa = batch_a.broadcast_strides(&self.strides()[..ra - 2], &batch)?;
        let sb = batch_b.broadcast_strides(&rhs.strides()[..rb - 2], &batch)?;
        let (sam, sak) = (self.strides()[ra - 2], self.strides()[ra - 1]);
        let (sbk, sbn) = (rhs.strides()[rb - 2], rhs.strides()[rb - 1]);

        let mut out_dims = batch.dims().to_vec();
        out_dims.extend([m, n]);
        let out_shape = Shape::from(out_dims);
        let total = out_shape.checked_elem_count()?;
        let mut out = try_vec(total, 0.0f32)?;
        if total == 0 {
            return Ok(Tensor::new_f32(out, out_shape));
        }
        // One row-loop "row" of length 1 per batch index gives each batch's two offsets.
        let mut batch_idx = 0;
        let mut bd = batch.dims().to_vec();
        bd.push(1);
        let (mut sa1, mut sb1) = (sa.clone(), sb.clone());
        sa1.push(0);
        sb1.push(0);
        for_each_row(
            &bd,
            [&sa1, &sb1],
            [self.offset(), rhs.offset()],
            |[oa, ob], _, _| {
                let c = &mut out[batch_idx * m * n..(batch_idx + 1) * m * n];
                // Tiles over columns and over k keep a K_TILE × N_TILE panel of `rhs` in cache;
                // for every output element the p loop still runs 0..k in order, so the bits are
                // those of the textbook loop.
                for j0 in (0..n).step_by(N_TILE) {
                    let j1 = (j0 + N_TILE).min(n);
                    for p0 in (0..k).step_by(K_TILE) {
                        let p1 = (p0 + K_TILE).min(k);
                        for i in 0..m {
                            let crow = &mut c[i * n + j0..i * n + j1];
                            for p in p0..p1 {
                                let av = a[oa + i * sam + p * sak];
                                let brow = ob + p * sbk;
                                if sbn == 1 {
                                    kernels::axpy(av, &b[brow + j0..brow + j1], crow);
                                } else {
                                    for (j, y) in crow.iter_mut().enumerate() {
                                        *y += av * b[brow + (j0 + j) * sbn];
                                    }
                                }
                            }
                        }
                    }
                }
                batch_idx += 1;
            },
        );
        Ok(Tensor::new_f32(out, out_shape))
    }
}
