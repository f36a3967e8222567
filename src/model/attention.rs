//! Attention over the KV cache: `att[i, h] = Σ_j softmax_j(q_ih · k_j) v_j` for a batch of query
//! rows, each over the positions it may see.
//!
//! A prompt has more rows than threads, so its rows are spread over them, up to [`ROWS`] rows
//! per call of [`attend`]. A decoded token is one row: from [`SPLIT_FROM`] positions
//! [`attend_split`] spreads that row's positions over the threads (blocks of them for the
//! scores, then for the weighted values), which at position ~1,000 is a fifth of a two-thread
//! token; below, [`attend`] runs on each thread for a share of the query heads. Every path
//! computes every score and output element with the same operations in the same order, so the
//! bits do not depend on the path or the thread count.

use super::config::Config;
use super::kv_cache::KvCache;
use crate::error::Result;
use crate::ops::kernels::{axpy_rows, dot_grid, softmax_by_position, weighted_rows};
use crate::parallel;
use crate::shape::checked_product;
use crate::storage::try_grow as grow;
use std::ops::Range;
use std::sync::Mutex;

/// Positions per chunk of [`attend_split`]'s scores.
const POSITION_BLOCK: usize = 64;

/// A prompt's query rows per call of [`attend`]: each key block and value block it reads from
/// the L3 cache then serves this many rows from the L1 and L2.
const ROWS: usize = 4;

/// Positions per block of keys when [`attend`] has several rows: a block's key rows (1 KB a
/// position for a 256-wide KV head) stay in the L1 while every row takes its scores from them.
const KEY_BLOCK: usize = 32;

/// Positions per block of the weighted values: every path sums `Σ_j p_j v_j` block by block and
/// adds the blocks' sums in order, so [`attend_split`] can hand the blocks to the threads with
/// the bits of one thread's loop, and a block's rows stay in cache over the passes that
/// [`weighted_rows`] makes over them.
const VALUE_BLOCK: usize = 128;

/// Positions from which a lone row's positions are split over the threads: below, handing out
/// their chunks costs more than it saves (measured in Chromium on two threads: a token's
/// attention at position ~100 took 1.9 ms split against 1.6 in one piece; at ~1,000, 5.7
/// against 7.0), and the row's heads are split instead.
const SPLIT_FROM: usize = 3 * POSITION_BLOCK;

/// Score buffers, grown (once) for the longest context served.
#[derive(Default)]
pub(super) struct AttnScratch {
    /// Per thread slot: `[ROWS, context, 4]`, the scores of the rows that thread is on by
    /// position, then the weights; then `[4, head_dim]`, a value block's sums.
    slots: Vec<Mutex<Vec<f32>>>,
    /// [`attend_split`]'s `[context, 4]` scores by position and each value block's
    /// `[4, head_dim]` sums (only with more than one thread).
    split: Vec<f32>,
}

impl AttnScratch {
    pub(super) fn ensure(&mut self, cfg: &Config, context: usize) -> Result<()> {
        let threads = parallel::num_threads();
        self.slots
            .resize_with((threads + 1).max(self.slots.len()), Default::default);
        let head_sums = checked_product("attention sums", &[4, cfg.head_dim])?;
        let scores =
            checked_product("attention scores", &[ROWS, 4, context])?.saturating_add(head_sums);
        for slot in &mut self.slots {
            grow(slot.get_mut().unwrap_or_else(|e| e.into_inner()), scores)?;
        }
        if threads > 1 {
            let blocks = context.div_ceil(VALUE_BLOCK).max(1);
            let split = checked_product(
                "attention scores",
                &[
                    4,
                    context.saturating_add(cfg.head_dim.saturating_mul(blocks)),
                ],
            )?;
            grow(&mut self.split, split)?;
        }
        Ok(())
    }
}

/// `att[i] = attention of query row q[i]` (`[n, q_dim]` both) at position `pos0 + i` of layer
/// `il`, whose keys and values for positions up to `pos0 + n` are in `cache`.
pub(super) fn attention(
    cfg: &Config,
    cache: &KvCache,
    il: usize,
    pos0: usize,
    q: &[f32],
    att: &mut [f32],
    s: &mut AttnScratch,
) {
    let qd = cfg.q_dim();
    // A lone row is a decoded token, whose cache rows were written by earlier calls and have
    // left the caches since; a prompt's rows read what the rows before them just read.
    let prefetch = att.len() == qd;
    let window = |pos: usize| -> Range<usize> {
        let lo = match (cfg.is_sliding(il), cfg.sliding_window) {
            (true, Some(win)) => (pos + 1).saturating_sub(win),
            _ => 0,
        };
        lo..pos + 1
    };
    let slots = &s.slots;
    let slot = || {
        let slot = &slots[parallel::thread_slot().min(slots.len() - 1)];
        slot.lock().unwrap_or_else(|e| e.into_inner())
    };
    if att.len() / qd < parallel::num_threads() {
        for (i, out) in att.chunks_exact_mut(qd).enumerate() {
            let (q, positions) = (&q[i * qd..(i + 1) * qd], window(pos0 + i));
            if positions.len() >= SPLIT_FROM {
                attend_split(cfg, cache, il, positions, q, out, &mut s.split);
                continue;
            }
            // Each thread takes a share of the heads: at position ~100 on two threads, a
            // token's attention took 0.48 ms on the leader alone, 0.29 so (section profile).
            let per_share = cfg.n_head.div_ceil(parallel::num_threads()).max(1);
            parallel::for_each_chunk_mut(out, per_share * cfg.head_dim, |c, out| {
                let heads = c * per_share..c * per_share + out.len() / cfg.head_dim;
                let sc = &mut slot();
                let rows = [positions.clone()];
                attend(cfg, cache, il, &rows, heads, q, out, sc, prefetch);
            });
        }
        return;
    }
    // Up to ROWS rows a chunk, fewer where that would leave a thread fewer than two chunks.
    let per = (att.len() / qd)
        .div_ceil(2 * parallel::num_threads())
        .clamp(1, ROWS);
    parallel::for_each_chunk_mut(att, per * qd, |c, out| {
        let (i, n) = (c * per, out.len() / qd);
        let rows: [Range<usize>; ROWS] = core::array::from_fn(|r| window(pos0 + i + r));
        let q = &q[i * qd..(i + n) * qd];
        let heads = 0..cfg.n_head;
        attend(
            cfg,
            cache,
            il,
            &rows[..n],
            heads,
            q,
            out,
            &mut slot(),
            prefetch,
        );
    });
}

/// The query heads `heads` by KV head in the order every path takes them: `(KV head, first
/// head, count)`, four at a time while four remain (one key or value row then serves four
/// heads), then two, then one.
fn head_groups(cfg: &Config, heads: Range<usize>) -> impl Iterator<Item = (usize, usize, usize)> {
    groups_of((cfg.n_head / cfg.n_head_kv.max(1)).max(1), heads)
}

/// [`head_groups`] with `group` query heads per KV head.
fn groups_of(group: usize, heads: Range<usize>) -> impl Iterator<Item = (usize, usize, usize)> {
    let mut h = heads.start;
    std::iter::from_fn(move || {
        let kvh = h / group;
        let end = ((kvh + 1) * group).min(heads.end);
        (h < end).then(|| {
            let take = match end - h {
                4.. => 4,
                2 | 3 => 2,
                _ => 1,
            };
            h += take;
            (kvh, h - take, take)
        })
    })
}

/// The attention of `rows.len()` query rows, row `r` over the positions `rows[r]`, for the
/// query heads `heads` (`out` holds each row's, `q` each row's every head):
/// `out[r, h] = Σ_j softmax_j(q_rh · k_j) v_j`. Query heads that share a KV head go four (or
/// two) at a time, so each key row is read once per four heads (`dot_grid`) and each value row
/// once per four heads and eight output elements (`weighted_rows`); several rows take each key
/// block ([`row_scores`]) and each value block in turn, so a block read from the L3 serves them
/// all. Every path gives the same bits as one row, one head and one position at a time.
/// `scores` holds `4 × rows.len()` times the longest row's positions, and `4 × head_dim`;
/// `prefetch` says the cache rows come from memory (a decoded token's): [`head_scores`] then
/// reads the key rows as runs in order ([`by_streams`]), [`weighted_rows`] touches value rows
/// ahead.
///
/// Never inlined: `forward` runs once per prompt, so these loops inlined into it ran a fresh
/// instance's whole first prefill in V8's baseline tier (measured in Chromium: a 986-token first
/// prefill at 207 tok/s inlined, 268 as a function of its own, which V8 optimises after a few
/// calls).
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn attend(
    cfg: &Config,
    cache: &KvCache,
    il: usize,
    rows: &[Range<usize>],
    heads: Range<usize>,
    q: &[f32],
    out: &mut [f32],
    scores: &mut [f32],
    prefetch: bool,
) {
    let (hd, kv_dim) = (cfg.head_dim, cache.kv_dim());
    let (rows, od) = (&rows[..rows.len().min(ROWS)], heads.len() * hd);
    let span = rows.iter().map(|p| p.len()).max().unwrap_or(0);
    let (by_position, block_sums) = scores.split_at_mut(4 * span * rows.len());
    let first = heads.start;
    for (kvh, h, take) in head_groups(cfg, heads) {
        let kv = kvh * hd..(kvh + 1) * hd;
        let mut chunks = by_position.chunks_mut(4 * span.max(1));
        let mut sc: [&mut [f32]; ROWS] = core::array::from_fn(|r| {
            let len = rows.get(r).map_or(0, |p| take * p.len());
            chunks.next().map_or(&mut [][..], |c| &mut c[..len])
        });
        let q_rows = |r: usize| &q[r * cfg.q_dim()..][h * hd..(h + take) * hd];
        row_scores(rows, q_rows, take, cache, il, &kv, &mut sc, prefetch);
        let weights = sc.map(|p| Weights::softmax(p, take));
        let blocks = rows.iter().map(|p| value_blocks(p.len()).len()).max();
        for b in 0..blocks.unwrap_or(0) {
            for (r, (p, w)) in rows.iter().zip(&weights).enumerate() {
                if b >= value_blocks(p.len()).len() {
                    continue;
                }
                let values = cache.values(il, p.clone()).get(kv.start..);
                let (values, rows) = (values.unwrap_or_default(), value_block(p.len(), b));
                let out = &mut out[r * od + (h - first) * hd..][..take * hd];
                if b == 0 {
                    w.weigh_rows(rows, values, kv_dim, out, prefetch);
                } else {
                    let sums = &mut block_sums[..take * hd];
                    w.weigh_rows(rows, values, kv_dim, sums, prefetch);
                    add_into(out, sums);
                }
            }
        }
    }
}

/// Writes each row's scores into `sc[r]` (`[positions, take]`) through [`head_scores`]: one row
/// in one piece, several by blocks of [`KEY_BLOCK`] positions, every row taking a block while
/// its keys are in the L1. (At ~1,000 positions a layer's keys are ~1 MB: each row read them
/// from the L3.)
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn row_scores<'q>(
    rows: &[Range<usize>],
    q_rows: impl Fn(usize) -> &'q [f32],
    take: usize,
    cache: &KvCache,
    il: usize,
    kv: &Range<usize>,
    sc: &mut [&mut [f32]; ROWS],
    prefetch: bool,
) {
    let lo = rows.iter().map(|p| p.start).min().unwrap_or(0);
    let hi = rows.iter().map(|p| p.end).max().unwrap_or(0);
    let block = if rows.len() > 1 { KEY_BLOCK } else { hi - lo };
    for b in (lo..hi).step_by(block.max(1)) {
        for (r, (p, sc)) in rows.iter().zip(sc.iter_mut()).enumerate() {
            let (start, end) = (b.max(p.start), (b + block).min(p.end));
            if start >= end {
                continue;
            }
            let key = |j: usize| &cache.key(il, start + j)[kv.clone()];
            let at = (start - p.start) * take;
            head_scores(q_rows(r), take, end - start, key, prefetch, &mut sc[at..]);
        }
    }
}

/// [`attend`] for one row with its work spread over the threads: the scores by blocks of
/// [`POSITION_BLOCK`] positions, then the softmax on this thread, then the weighted values by
/// blocks of [`VALUE_BLOCK`] positions, whose sums this thread adds up in order. `buf` holds
/// `4 × positions.len()`, and `4 × head_dim` for each value block. (Split by each head's elements
/// instead, the weighted values took one thread's time on two: 0.97 against 1.07 ms a token at
/// position ~1,000.)
#[inline(never)]
fn attend_split(
    cfg: &Config,
    cache: &KvCache,
    il: usize,
    positions: Range<usize>,
    q: &[f32],
    out: &mut [f32],
    buf: &mut [f32],
) {
    let hd = cfg.head_dim;
    let (lo, len) = (positions.start, positions.len());
    let (by_position, parts) = buf.split_at_mut(4 * len);
    let values = cache.values(il, positions);
    for (kvh, h, take) in head_groups(cfg, 0..cfg.n_head) {
        let kv = kvh * hd..(kvh + 1) * hd;
        let heads = &q[h * hd..(h + take) * hd];
        // by_position[j·take + t] = q_t · k_j
        let block = take * POSITION_BLOCK;
        parallel::for_each_chunk_mut(&mut by_position[..take * len], block, |b, chunk| {
            let key = |j: usize| &cache.key(il, lo + b * POSITION_BLOCK + j)[kv.clone()];
            let n = chunk.len() / take;
            head_scores(heads, take, n, key, true, chunk);
        });
        let p = Weights::softmax(&mut by_position[..take * len], take);
        // parts[b·take·hd..][..take·hd] = value block b's Σ_j p_tj v_j, head t's at t·hd
        let (w, values) = (take * hd, values.get(kv.start..).unwrap_or_default());
        let parts = &mut parts[..value_blocks(len).len() * w];
        parallel::for_each_chunk_mut(parts, w, |b, part| {
            p.weigh_rows(value_block(len, b), values, cache.kv_dim(), part, true);
        });
        let out = &mut out[h * hd..(h + take) * hd];
        out.copy_from_slice(&parts[..w]);
        parts[w..]
            .chunks_exact(w)
            .for_each(|part| add_into(out, part));
    }
}

/// The blocks of [`VALUE_BLOCK`] positions of `0..len`: at least one, empty for no positions.
fn value_blocks(len: usize) -> impl ExactSizeIterator<Item = Range<usize>> {
    (0..len.div_ceil(VALUE_BLOCK).max(1)).map(move |b| value_block(len, b))
}

/// Block `b` of [`value_blocks`].
fn value_block(len: usize, b: usize) -> Range<usize> {
    (b * VALUE_BLOCK).min(len)..((b + 1) * VALUE_BLOCK).min(len)
}

/// `out += part`, element by element.
fn add_into(out: &mut [f32], part: &[f32]) {
    out.iter_mut().zip(part).for_each(|(o, p)| *o += p);
}

/// `out[j·take + t] = q_t · key(j)` for the one, two or four query heads `t` in `heads` and the
/// rows `j < n`, every score with `dot`'s bits: a prompt's four heads take two key rows at a time
/// (`dot_grid`, whose eight chains then overlap), two heads and one head four; the tails one row
/// at a time. Measured in Chromium against one key row at a time: a 1,060-token prompt's
/// attention 1.69 → 1.46 ms a token (fastest of five).
///
/// A decoded token's key rows (`prefetch`) come from memory, where reading them in order lets
/// the CPU's prefetchers stream them: [`by_streams`] takes its rows from two (four heads) or four
/// runs of rows, each read in order. Two adjacent rows at a time, which the CPU did not stream,
/// took a token's attention at ~1,000 positions from 2.05 to 2.9 ms; four heads one row at a
/// time waited on the adds of four chains. Against that, two runs took it 2.11 → 1.70 ms on one
/// thread (2.02–2.19 → 1.69–1.72, three interleaved section profiles, Gemma 3 270M on the AMD
/// EPYC host) and 1.30–1.76 → 1.22–1.32 on two; two threads' head shares (two heads each, four
/// runs instead of four adjacent rows with the rows ahead touched) 0.49–0.56 → 0.45–0.47 ms a
/// token at ~100.
#[inline(always)]
fn head_scores<'c>(
    heads: &[f32],
    take: usize,
    n: usize,
    key: impl Fn(usize) -> &'c [f32],
    prefetch: bool,
    out: &mut [f32],
) {
    let hd = heads.len() / take;
    let mut j = 0;
    match take {
        4 => {
            let qs: [&[f32]; 4] = core::array::from_fn(|t| &heads[t * hd..(t + 1) * hd]);
            if prefetch {
                j = by_streams::<4, 2>(qs, &key, n, out);
            }
            // A prompt's rows two at a time.
            while j + 2 <= n {
                rows_by_heads::<4, 2>(qs, &key, j, 1, out);
                j += 2;
            }
            if j < n {
                // An odd last row as a pair with itself (written twice to the same place), so
                // four heads run the pairs' code only: V8 optimises a function once it has run
                // enough, and a lone-row kernel that only odd rows reached ran a fresh
                // instance's first prompt in the baseline tier.
                dot_grid(qs, [key(j), key(j)], &mut out[4 * j..], 0);
            }
        }
        2 => {
            let qs = [&heads[..hd], &heads[hd..]];
            if prefetch {
                j = by_streams::<2, 4>(qs, &key, n, out);
            }
            while j + 4 <= n {
                rows_by_heads::<2, 4>(qs, &key, j, 1, out);
                j += 4;
            }
            for j in j..n {
                rows_by_heads::<2, 1>(qs, &key, j, 1, out);
            }
        }
        _ => {
            if prefetch {
                j = by_streams::<1, 4>([heads], &key, n, out);
            }
            while j + 4 <= n {
                rows_by_heads::<1, 4>([heads], &key, j, 1, out);
                j += 4;
            }
            for j in j..n {
                rows_by_heads::<1, 1>([heads], &key, j, 1, out);
            }
        }
    }
}

/// The `H` heads' scores of the first `R · (n / R)` key rows, into `out` as [`head_scores`]':
/// `R` rows at a time, one from each of `R` runs of `n / R` rows that follow one another, so
/// each run is read in order (a stream the CPU prefetches). Returns how many rows it took.
#[inline(always)]
fn by_streams<'c, const H: usize, const R: usize>(
    qs: [&[f32]; H],
    key: &impl Fn(usize) -> &'c [f32],
    n: usize,
    out: &mut [f32],
) -> usize {
    let run = n / R;
    (0..run).for_each(|j| rows_by_heads::<H, R>(qs, key, j, run, out));
    R * run
}

/// The `H` heads' scores of the `R` key rows `j + r · step`, into `out` as [`head_scores`]'.
#[inline(always)]
fn rows_by_heads<'c, const H: usize, const R: usize>(
    qs: [&[f32]; H],
    key: &impl Fn(usize) -> &'c [f32],
    j: usize,
    step: usize,
    out: &mut [f32],
) {
    let keys = core::array::from_fn::<_, R, _>(|r| key(j + r * step));
    dot_grid(qs, keys, &mut out[j * H..], step * H);
}

/// A row's softmax weights for one, two or four heads, by position (`[len, take]`, the order
/// the scores come in and [`weighted_rows`] reads).
struct Weights<'a> {
    by_position: &'a [f32],
    take: usize,
}

impl<'a> Weights<'a> {
    /// The weights of the `take` heads' scores `p` (by position), in place: each head's
    /// `p_j = e^(s_j − max) / Σe`, with the bits of that head's row alone.
    fn softmax(p: &'a mut [f32], take: usize) -> Weights<'a> {
        match take {
            4 => softmax_by_position::<4>(p),
            2 => softmax_by_position::<2>(p),
            _ => softmax_by_position::<1>(p),
        }
        Weights {
            by_position: p,
            take,
        }
    }

    /// `out_t = Σ_j p_t[j] · v_j` over the positions `j` in `rows` for each head `t`, `out`
    /// holding the heads' rows one after another and `v_j` the row of `values` at `j · stride`.
    fn weigh_rows(
        &self,
        rows: Range<usize>,
        values: &[f32],
        stride: usize,
        out: &mut [f32],
        prefetch: bool,
    ) {
        let values = values.get(rows.start * stride..).unwrap_or_default();
        let by_position = |t: usize| &self.by_position[t * rows.start..t * rows.end];
        match self.take {
            4 => weighted_heads::<4>(by_position(4), values, stride, out, prefetch),
            2 => weighted_heads::<2>(by_position(2), values, stride, out, prefetch),
            _ => weighted_sum(&self.by_position[rows.clone()], values, stride, out),
        }
    }
}

/// [`weighted_rows`] for `T` heads whose outputs lie one after another in `out`, `p` their
/// weights by position.
fn weighted_heads<const T: usize>(
    p: &[f32],
    values: &[f32],
    stride: usize,
    o: &mut [f32],
    prefetch: bool,
) {
    let mut heads = o.chunks_exact_mut((o.len() / T).max(1));
    let mut outs: [&mut [f32]; T] = core::array::from_fn(|_| heads.next().unwrap_or_default());
    weighted_rows(p, values, stride, &mut outs, prefetch);
}

/// `o = Σ_j p[j] · v_j`, `v_j` the row of `values` at `j · stride`: four positions at a time
/// (`axpy_rows`), the tail one by one.
fn weighted_sum(p: &[f32], values: &[f32], stride: usize, o: &mut [f32]) {
    let w = o.len();
    let value = |j: usize| &values[j * stride..][..w];
    o.fill(0.0);
    let mut j = 0;
    while j + 4 <= p.len() {
        let c = [p[j], p[j + 1], p[j + 2], p[j + 3]];
        axpy_rows(c, [value(j), value(j + 1), value(j + 2), value(j + 3)], o);
        j += 4;
    }
    for (j, &c) in p.iter().enumerate().skip(j) {
        axpy_rows([c], [value(j)], o);
    }
}

#[cfg(test)]
mod tests {
    use super::groups_of;

    /// A thread's share of the heads may start and end inside a KV head's group (here three
    /// query heads a KV head, the share 4..10); groups never cross either edge.
    #[test]
    fn head_groups_stay_within_a_kv_head_and_the_share() {
        let got: Vec<_> = groups_of(3, 4..10).collect();
        assert_eq!(got, [(1, 4, 2), (2, 6, 2), (2, 8, 1), (3, 9, 1)]);
        let got: Vec<_> = groups_of(8, 0..8).collect();
        assert_eq!(got, [(0, 0, 4), (0, 4, 4)]);
        let got: Vec<_> = groups_of(7, 7..14).collect();
        assert_eq!(got, [(1, 7, 4), (1, 11, 2), (1, 13, 1)]);
        assert_eq!(groups_of(4, 2..2).count(), 0);
    }
}
