//! SentencePiece (llama.cpp `llm_tokenizer_spm_session`): the bigram with the best merged score
//! merges first, then every symbol that is no token falls back to byte tokens.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{utf8_len, Tokenizer, NONE};

#[derive(Clone, Copy)]
struct Symbol {
    start: u32,
    /// Byte length; 0 once merged into its left neighbour.
    n: u32,
    prev: i32,
    next: i32,
}

#[derive(Clone, Copy)]
struct Bigram {
    /// The merged token's score, with NaN mapped to -inf and -0 to +0 so that `total_cmp`
    /// orders like IEEE `<`.
    score: f32,
    left: u32,
    right: u32,
    size: u32,
}

impl Ord for Bigram {
    /// Max-heap order: higher score first, then smaller left index (then the rest, only to make
    /// the order total; such ties cannot both be live).
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then(other.left.cmp(&self.left))
            .then(other.right.cmp(&self.right))
            .then(other.size.cmp(&self.size))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

#[derive(Default)]
pub(super) struct SpmSession {
    symbols: Vec<Symbol>,
    heap: BinaryHeap<Bigram>,
}

impl SpmSession {
    pub(super) fn tokenize(&mut self, tok: &Tokenizer, text: &[u8], out: &mut Vec<u32>) {
        self.symbols.clear();
        self.heap.clear();
        if text.is_empty() {
            return;
        }
        let mut offs = 0;
        while offs < text.len() {
            let n = utf8_len(text[offs]).min(text.len() - offs);
            let index = self.symbols.len() as i32;
            offs += n;
            self.symbols.push(Symbol {
                start: (offs - n) as u32,
                n: n as u32,
                prev: index - 1,
                next: if offs == text.len() { -1 } else { index + 1 },
            });
        }
        for i in 1..self.symbols.len() as i32 {
            self.try_add_bigram(tok, text, i - 1, i);
        }
        while let Some(b) = self.heap.pop() {
            let (l, r) = (b.left as usize, b.right as usize);
            let (ln, rn) = (self.symbols[l].n, self.symbols[r].n);
            if ln == 0 || rn == 0 || ln + rn != b.size {
                continue; // stale: one side changed since this pair was queued
            }
            let right_next = self.symbols[r].next;
            self.symbols[l].n += rn;
            self.symbols[r].n = 0;
            self.symbols[l].next = right_next;
            if right_next >= 0 {
                self.symbols[right_next as usize].prev = l as i32;
            }
            let left_prev = self.symbols[l].prev;
            self.try_add_bigram(tok, text, left_prev, l as i32);
            self.try_add_bigram(tok, text, l as i32, right_next);
        }
        // Resegment. A merged symbol's text is always a token (merges only happen then), and
        // llama.cpp's `rev_merge` only holds texts that are tokens, so for an unknown single
        // character its lookup always misses: only the byte fallback remains.
        let mut i = 0i32;
        while i != -1 {
            let s = self.symbols[i as usize];
            let piece = &text[s.start as usize..(s.start + s.n) as usize];
            match tok.lookup(piece) {
                Some(id) => out.push(id),
                None => out.extend(
                    piece
                        .iter()
                        .map(|&b| tok.byte_tokens[b as usize])
                        .filter(|&id| id != NONE),
                ),
            }
            i = s.next;
        }
    }

    fn try_add_bigram(&mut self, tok: &Tokenizer, text: &[u8], left: i32, right: i32) {
        if left < 0 || right < 0 {
            return;
        }
        let (l, r) = (self.symbols[left as usize], self.symbols[right as usize]);
        let size = l.n + r.n;
        let piece = &text[l.start as usize..(l.start + size) as usize];
        let Some(id) = tok.lookup(piece) else {
            return;
        };
        let score = tok.scores[id as usize];
        let score = if score.is_nan() {
            f32::NEG_INFINITY
        } else {
            score + 0.0
        };
        self.heap.push(Bigram {
            score,
            left: left as u32,
            right: right as u32,
            size,
        });
    }
}
