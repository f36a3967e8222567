//! Tesseract's recode beam search without a dictionary (`RecodeBeamSearch` with `dict ==
//! nullptr`): a CTC beam over output codes in which each step keeps, per code-sequence length
//! and "continuation" state, the 5 (10, 16 …) best paths, considering only the top two codes
//! and the blank unless nothing survives. Paths that spell the same text so far merge (the
//! better one wins), which is what lets a character whose probability is split over frames
//! beat the blank. Written from the published algorithm so the text matches Tesseract's.

use super::charset::Charset;

/// Certainties below this (natural log) drop a candidate (`kMinCertainty`).
const MIN_CERTAINTY: f32 = -20.0;
/// Per-length heap widths (`kBeamWidths`).
const BEAM_WIDTHS: [usize; 10] = [5, 10, 16, 16, 16, 16, 16, 16, 16, 16];
const LENGTHS: usize = 10;
/// What Tesseract's line recognizer passes to the search (`kDictRatio`, `kCertOffset`).
const DICT_RATIO: f32 = 2.25;
const CERT_OFFSET: f64 = -0.085;

/// How a path may continue (`NodeContinuation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cont {
    /// Its last frame used only its own probability.
    Anything = 0,
    /// Its last frame borrowed the blank's probability: it must repeat.
    OnlyDup = 1,
    /// It borrowed after a stand-alone repeat: it must not repeat again.
    NoDup = 2,
}

/// Where a code ranks in this frame (`TopNState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rank {
    Top2 = 0,
    TopN = 1,
    AlsoRan = 2,
}

#[derive(Debug, Clone, Copy)]
struct Node {
    code: u32,
    /// `None` for the blank and for codes that do not finish a character.
    unichar: Option<usize>,
    duplicate: bool,
    certainty: f32,
    score: f32,
    prev: Option<u32>,
    hash: u64,
}

/// A min-heap on score with Tesseract's `GenericHeap` sift order (ties resolve as there).
#[derive(Debug, Default, Clone)]
struct Heap(Vec<(f64, u32)>);

impl Heap {
    fn sift_up(&mut self, mut hole: usize, key: f64) -> usize {
        while hole > 0 {
            let parent = hole.div_ceil(2) - 1;
            if key < self.0[parent].0 {
                self.0[hole] = self.0[parent];
                hole = parent;
            } else {
                break;
            }
        }
        hole
    }

    fn sift_down(&mut self, mut hole: usize, key: f64) -> usize {
        let n = self.0.len();
        loop {
            let mut child = hole * 2 + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.0[child + 1].0 < self.0[child].0 {
                child += 1;
            }
            if self.0[child].0 < key {
                self.0[hole] = self.0[child];
                hole = child;
            } else {
                break;
            }
        }
        hole
    }

    fn push(&mut self, entry: (f64, u32)) {
        self.0.push(entry);
        let hole = self.sift_up(self.0.len() - 1, entry.0);
        self.0[hole] = entry;
    }

    fn pop(&mut self) {
        let Some(last) = self.0.pop() else { return };
        if !self.0.is_empty() {
            let hole = self.sift_down(0, last.0);
            self.0[hole] = last;
        }
    }

    fn reshuffle(&mut self, index: usize) {
        let entry = self.0[index];
        let i = self.sift_down(index, entry.0);
        let i = self.sift_up(i, entry.0);
        self.0[i] = entry;
    }
}

/// One decoded character: its unichar, certainty (Tesseract's scaled log units, ≤ 0) and
/// output frames `[start, end)` (boundaries split the blank gaps between characters).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecodedChar {
    pub unichar: usize,
    pub certainty: f32,
    pub frames: (usize, usize),
}

struct Search<'a> {
    charset: &'a Charset,
    null: u32,
    nodes: Vec<Node>,
    /// This step's heaps, indexed `cont * LENGTHS + length`.
    beams: Vec<Heap>,
    flags: Vec<Rank>,
    top: Option<u32>,
    second: Option<u32>,
}

/// Decodes `[frames, codes]` softmax outputs; nothing when the frames are not as wide as
/// the charset's code range (the recognizer checks that at load) or `null` is not a code.
pub(crate) fn decode(
    probs: &[f32],
    codes: usize,
    charset: &Charset,
    null: u32,
) -> Vec<DecodedChar> {
    if codes == 0 || probs.len() < codes || charset.code_range > codes || null as usize >= codes {
        return Vec::new();
    }
    let mut s = Search {
        charset,
        null,
        nodes: Vec::new(),
        beams: vec![Heap::default(); 3 * LENGTHS],
        flags: vec![Rank::AlsoRan; codes],
        top: None,
        second: None,
    };
    let frames: Vec<&[f32]> = probs.chunks_exact(codes).collect();
    for (t, p) in frames.iter().enumerate() {
        s.rank(p);
        let prev = std::mem::replace(&mut s.beams, vec![Heap::default(); 3 * LENGTHS]);
        if t == 0 {
            s.continue_from(None, 0, p, Rank::Top2);
            continue;
        }
        for rank in [Rank::Top2, Rank::TopN, Rank::AlsoRan] {
            for (index, heap) in prev.iter().enumerate() {
                for &(_, node) in heap.0.iter().rev() {
                    s.continue_from(Some(node), index, p, rank);
                }
            }
            if s.beams[..LENGTHS].iter().any(|h| !h.0.is_empty()) {
                break;
            }
        }
    }
    s.best_path()
        .map(|path| s.characters(&path))
        .unwrap_or_default()
}

/// `ln p` floored at -20, plus the line recognizer's offset (in f64, stored as f32).
fn certainty(p: f32) -> f32 {
    let c = if p > (-20.0f32).exp() {
        p.ln()
    } else {
        MIN_CERTAINTY
    };
    (c as f64 + CERT_OFFSET) as f32
}

impl Search<'_> {
    /// Flags the frame's top 5 codes (`ComputeTopN`); the blank always counts as top 2.
    fn rank(&mut self, p: &[f32]) {
        self.flags.iter_mut().for_each(|f| *f = Rank::AlsoRan);
        let mut heap = Heap::default();
        for (i, &v) in p.iter().enumerate() {
            if heap.0.len() < BEAM_WIDTHS[0] || (v as f64) > heap.0[0].0 {
                heap.push((v as f64, i as u32));
                if heap.0.len() > BEAM_WIDTHS[0] {
                    heap.pop();
                }
            }
        }
        (self.top, self.second) = (None, None);
        while let Some(&(_, code)) = heap.0.first() {
            heap.pop();
            if heap.0.len() > 1 {
                self.flags[code as usize] = Rank::TopN;
            } else {
                self.flags[code as usize] = Rank::Top2;
                if heap.0.is_empty() {
                    self.top = Some(code);
                } else {
                    self.second = Some(code);
                }
            }
        }
        self.flags[self.null as usize] = Rank::Top2;
    }

    /// Extends one path (or the empty start) by this frame's candidates of one rank
    /// (`ContinueContext` without dictionary).
    fn continue_from(&mut self, prev: Option<u32>, index: usize, p: &[f32], rank: Rank) {
        let length = index % LENGTHS;
        let cont = [Cont::Anything, Cont::OnlyDup, Cont::NoDup][index / LENGTHS];
        let prefix = self.prefix(prev, length);
        let null = self.null;
        if let Some(pi) = prev {
            let pn = self.nodes[pi as usize];
            if self.flags[pn.code as usize] == rank {
                if cont != Cont::NoDup {
                    self.push_dup(
                        length,
                        true,
                        pn.code,
                        pn.unichar,
                        certainty(p[pn.code as usize]),
                        Cont::Anything,
                        prev,
                    );
                }
                if cont == Cont::Anything && rank == Rank::Top2 && pn.code != null {
                    let c = certainty(p[pn.code as usize] + p[null as usize]);
                    self.push_dup(length, true, pn.code, pn.unichar, c, Cont::NoDup, prev);
                }
            }
            if cont == Cont::OnlyDup {
                return;
            }
            if pn.code != null && length > 0 && self.flags[null as usize] == rank {
                self.push_dup(
                    length,
                    false,
                    null,
                    None,
                    certainty(p[null as usize]),
                    Cont::Anything,
                    prev,
                );
            }
        }
        let prev_code = prev.map(|i| self.nodes[i as usize].code);
        let finals = self.charset.final_codes(&prefix).to_vec();
        for code in finals {
            if self.flags[code as usize] != rank || prev_code == Some(code) {
                continue;
            }
            let cert = certainty(p[code as usize]);
            if cert < MIN_CERTAINTY && code != null {
                continue;
            }
            let unichar = if length == 0 && code == null {
                None
            } else {
                let mut full = prefix.clone();
                full.push(code);
                self.charset.lookup(&full)
            };
            self.push(
                BEAM_WIDTHS[0],
                code,
                unichar,
                false,
                cert * DICT_RATIO,
                Cont::Anything,
                0,
                prev,
            );
            if rank == Rank::Top2 && code != null {
                let c = certainty(self.borrowed(p, code, prev_code, cont));
                self.push(
                    BEAM_WIDTHS[0],
                    code,
                    unichar,
                    false,
                    c * DICT_RATIO,
                    Cont::OnlyDup,
                    0,
                    prev,
                );
            }
        }
        let nexts = self.charset.next_codes(&prefix).to_vec();
        for code in nexts {
            if self.flags[code as usize] != rank || prev_code == Some(code) {
                continue;
            }
            self.push_dup(
                length + 1,
                false,
                code,
                None,
                certainty(p[code as usize]),
                Cont::Anything,
                prev,
            );
            if rank == Rank::Top2 && code != null {
                let c = certainty(self.borrowed(p, code, prev_code, cont));
                self.push_dup(length + 1, false, code, None, c, Cont::OnlyDup, prev);
            }
        }
    }

    /// A code's probability with the blank's added (and the previous code's, when the two
    /// swap first and second place).
    fn borrowed(&self, p: &[f32], code: u32, prev_code: Option<u32>, cont: Cont) -> f32 {
        let mut prob = p[code as usize] + p[self.null as usize];
        if let Some(pc) = prev_code.filter(|&pc| cont == Cont::Anything && pc != self.null) {
            let (top, second) = (self.top, self.second);
            if (Some(pc) == top && Some(code) == second)
                || (Some(code) == top && Some(pc) == second)
            {
                prob += p[pc as usize];
            }
        }
        prob
    }

    /// The codes of the unfinished character at the end of `prev`'s path.
    fn prefix(&self, prev: Option<u32>, length: usize) -> Vec<u32> {
        let mut prefix = vec![0; length];
        let mut node = prev;
        for slot in prefix.iter_mut().rev() {
            while let Some(n) = node.map(|i| self.nodes[i as usize]) {
                if !(n.duplicate || n.code == self.null) {
                    break;
                }
                node = n.prev;
            }
            if let Some(i) = node {
                *slot = self.nodes[i as usize].code;
                node = self.nodes[i as usize].prev;
            }
        }
        prefix
    }

    /// `PushDupOrNoDawgIfBetter` without dictionary.
    #[allow(clippy::too_many_arguments)]
    fn push_dup(
        &mut self,
        length: usize,
        dup: bool,
        code: u32,
        unichar: Option<usize>,
        cert: f32,
        cont: Cont,
        prev: Option<u32>,
    ) {
        let cert = cert * DICT_RATIO;
        if cert >= MIN_CERTAINTY || code == self.null {
            self.push(
                BEAM_WIDTHS[length],
                code,
                unichar,
                dup,
                cert,
                cont,
                length,
                prev,
            );
        }
    }

    /// `PushHeapIfBetter`: keeps the heap's best `width` paths; a path with the same code and
    /// text history as one already there replaces it only if better.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        width: usize,
        code: u32,
        unichar: Option<usize>,
        dup: bool,
        cert: f32,
        cont: Cont,
        length: usize,
        prev: Option<u32>,
    ) {
        let prev_node = prev.map(|i| self.nodes[i as usize]);
        let score = cert + prev_node.map_or(0.0, |n| n.score);
        let heap_index = cont as usize * LENGTHS + length;
        let heap = &self.beams[heap_index];
        if heap.0.len() >= width && score as f64 <= heap.0[0].0 {
            return;
        }
        let mut hash = prev_node.map_or(0, |n| n.hash);
        if !dup && code != self.null {
            let range = self.charset.code_range as u64;
            let carry = ((hash >> 32).wrapping_mul(range)) >> 32;
            hash = hash
                .wrapping_mul(range)
                .wrapping_add(carry)
                .wrapping_add(code as u64);
        }
        let node = Node {
            code,
            unichar,
            duplicate: dup,
            certainty: cert,
            score,
            prev,
            hash,
        };
        let matched = heap.0.iter().position(|&(_, i)| {
            let n = &self.nodes[i as usize];
            n.code == code && n.hash == hash
        });
        if let Some(pos) = matched {
            let old = self.beams[heap_index].0[pos].1 as usize;
            if score > self.nodes[old].score {
                self.nodes[old] = node;
                self.beams[heap_index].0[pos].0 = score as f64;
                self.beams[heap_index].reshuffle(pos);
            }
            return;
        }
        self.nodes.push(node);
        let heap = &mut self.beams[heap_index];
        heap.push((score as f64, (self.nodes.len() - 1) as u32));
        if heap.0.len() > width {
            heap.pop();
        }
    }

    /// The best finished path (continuations other than `OnlyDup`), one node per frame.
    fn best_path(&self) -> Option<Vec<Node>> {
        let mut best: Option<Node> = None;
        for cont in [Cont::Anything, Cont::NoDup] {
            for &(_, i) in &self.beams[cont as usize * LENGTHS].0 {
                let n = self.nodes[i as usize];
                if best.is_none_or(|b| n.score > b.score) {
                    best = Some(n);
                }
            }
        }
        let mut path = Vec::new();
        let mut node = best;
        while let Some(n) = node {
            path.push(n);
            node = n.prev.map(|i| self.nodes[i as usize]);
        }
        path.reverse();
        (!path.is_empty()).then_some(path)
    }

    /// `ExtractPathAsUnicharIds` + `calculateCharBoundaries`: characters with the lowest
    /// certainty over their frames (a blank run before a space counts for the character
    /// before it) and frame spans meeting in the middle of blank gaps.
    fn characters(&self, path: &[Node]) -> Vec<DecodedChar> {
        let (mut out, mut starts, mut ends) = (Vec::<DecodedChar>::new(), Vec::new(), Vec::new());
        let width = path.len();
        let mut t = 0;
        while t < width {
            let mut cert = 0.0f32;
            while t < width && path[t].unichar.is_none() {
                cert = cert.min(path[t].certainty);
                t += 1;
            }
            starts.push(t);
            if t == width {
                if let Some(last) = out.last_mut() {
                    last.certainty = last.certainty.min(cert);
                }
                break;
            }
            let unichar = path[t].unichar.unwrap_or(0);
            if unichar == 0 {
                if let Some(last) = out.last_mut() {
                    last.certainty = last.certainty.min(cert);
                    cert = 0.0;
                }
            }
            loop {
                cert = cert.min(path[t].certainty);
                t += 1;
                if t >= width || !path[t].duplicate {
                    break;
                }
            }
            ends.push(t);
            out.push(DecodedChar {
                unichar,
                certainty: cert,
                frames: (0, 0),
            });
        }
        starts.push(width);
        let mut bounds = vec![0];
        for (i, &end) in ends.iter().enumerate() {
            bounds.push(end + (starts[i + 1] - end) / 2);
        }
        bounds.pop();
        bounds.push(width);
        for (i, c) in out.iter_mut().enumerate() {
            c.frames = (bounds[i], bounds[i + 1]);
        }
        out
    }
}
