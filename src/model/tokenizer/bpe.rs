//! Byte-level BPE (GPT-2 style; llama.cpp `llm_tokenizer_bpe_session`): each pre-token's bytes
//! become printable characters (GPT-2's byte map, the alphabet the vocabulary is written in),
//! one symbol per byte, and adjacent symbols merge lowest merge rank first (leftmost on ties).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::pre_tokenizer::PreTokenizer;
use super::{Tokenizer, NONE};
use crate::gguf::StrArray;
use crate::{Error, Result};

/// GPT-2's byte → character map: printable Latin-1 bytes stand for themselves, the other 68
/// (controls, space, DEL, NBSP, soft hyphen) take U+0100.. in byte order.
const BYTE_CHARS: [char; 256] = {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    let mut b = 0;
    while b < 256 {
        let printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        let code = if printable {
            b as u32
        } else {
            next += 1;
            next - 1
        };
        table[b] = match char::from_u32(code) {
            Some(c) => c,
            None => '\0',
        };
        b += 1;
    }
    table
};

/// [`BYTE_CHARS`] inverted: the byte each map character stands for, by code point (all of
/// them lie below U+0144); -1 for a code point the map does not use.
const CHAR_BYTES: [i16; 0x144] = {
    let mut table = [-1i16; 0x144];
    let mut b = 0;
    while b < 256 {
        table[BYTE_CHARS[b] as usize] = b as i16;
        b += 1;
    }
    table
};

/// The byte a character of the byte map stands for.
fn char_byte(c: char) -> Option<u8> {
    let b = *CHAR_BYTES.get(c as usize)?;
    u8::try_from(b).ok()
}

/// The character `b` is written as in a byte-level vocabulary.
pub(super) fn byte_char(b: u8) -> char {
    BYTE_CHARS[b as usize]
}

/// The bytes a NORMAL token's text stands for (a character outside the map, which a
/// well-formed vocabulary does not have, stays as its UTF-8).
pub(super) fn unmap(text: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match char_byte(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

#[derive(Clone)]
pub(super) struct Bpe {
    pre: PreTokenizer,
    /// `(left id, right id)` → `(rank, merged id)`, from `tokenizer.ggml.merges` ("left right").
    merges: HashMap<(u32, u32), (u32, u32)>,
}

impl Bpe {
    /// The merge table of `merges` over `tok`'s vocabulary. A merge whose parts or result are
    /// not tokens can never produce an id and is left out.
    pub(super) fn new(tok: &Tokenizer, merges: &StrArray, pre: &str) -> Result<Bpe> {
        let mut table = HashMap::new();
        table
            .try_reserve(merges.len())
            .map_err(|_| Error::alloc::<((u32, u32), (u32, u32))>(merges.len()))?;
        let mut joined = Vec::new();
        for (rank, m) in merges.iter().enumerate() {
            let Some((l, r)) = m.split_once(' ') else {
                return Err(Error::MissingMetadata {
                    key: "tokenizer.ggml.merges".into(),
                    reason: format!("merge {rank} ({m:?}) is not two space-separated parts"),
                });
            };
            joined.clear();
            joined.extend_from_slice(l.as_bytes());
            joined.extend_from_slice(r.as_bytes());
            let ids = (
                tok.lookup(l.as_bytes()),
                tok.lookup(r.as_bytes()),
                tok.lookup(&joined),
            );
            if let (Some(a), Some(b), Some(ab)) = ids {
                table.entry((a, b)).or_insert((rank as u32, ab));
            }
        }
        Ok(Bpe {
            pre: PreTokenizer::new(pre)?,
            merges: table,
        })
    }

    /// Appends the ids of `text` (no special tokens in it) to `out`.
    pub(super) fn tokenize(&self, tok: &Tokenizer, text: &str, out: &mut Vec<u32>) {
        let mut session = Session::default();
        for (s, e) in self.pre.split(text) {
            session.word(self, tok, &text.as_bytes()[s..e], out);
        }
    }
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: i32,
    next: i32,
    alive: bool,
}

/// A queued merge of adjacent symbols; ordered by rank, then leftmost (llama.cpp's order). The
/// ids say which symbols it was queued for, so a stale entry is recognised when popped.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pair {
    rank: u32,
    left: u32,
    right: u32,
    left_id: u32,
    right_id: u32,
}

/// Scratch of one `tokenize` call, reused across its pre-tokens.
#[derive(Default)]
struct Session {
    symbols: Vec<Symbol>,
    queue: BinaryHeap<Reverse<Pair>>,
    mapped: String,
}

impl Session {
    fn word(&mut self, bpe: &Bpe, tok: &Tokenizer, bytes: &[u8], out: &mut Vec<u32>) {
        if bpe.pre.ignore_merges {
            self.mapped.clear();
            self.mapped.extend(bytes.iter().map(|&b| byte_char(b)));
            if let Some(id) = tok.lookup(self.mapped.as_bytes()) {
                out.push(id);
                return;
            }
        }
        let n = bytes.len() as i32;
        self.symbols.clear();
        self.symbols
            .extend(bytes.iter().enumerate().map(|(i, &b)| Symbol {
                id: tok.byte_tokens[b as usize],
                prev: i as i32 - 1,
                next: if i as i32 + 1 == n { -1 } else { i as i32 + 1 },
                alive: true,
            }));
        self.queue.clear();
        for i in 1..n {
            self.push_pair(bpe, i - 1, i);
        }
        while let Some(Reverse(p)) = self.queue.pop() {
            let (l, r, lid, rid) = (p.left, p.right, p.left_id, p.right_id);
            let (left, right) = (self.symbols[l as usize], self.symbols[r as usize]);
            let live = left.alive && right.alive && left.next == r as i32;
            if !live || left.id != lid || right.id != rid {
                continue; // stale: a neighbour merged since this pair was queued
            }
            let Some(&(_, merged)) = bpe.merges.get(&(lid, rid)) else {
                continue;
            };
            self.symbols[l as usize].id = merged;
            self.symbols[l as usize].next = right.next;
            self.symbols[r as usize].alive = false;
            if right.next >= 0 {
                self.symbols[right.next as usize].prev = l as i32;
            }
            self.push_pair(bpe, left.prev, l as i32);
            self.push_pair(bpe, l as i32, right.next);
        }
        let mut i = if n > 0 { 0 } else { -1 };
        while i >= 0 {
            let s = self.symbols[i as usize];
            if s.id != NONE {
                out.push(s.id);
            }
            i = s.next;
        }
    }

    fn push_pair(&mut self, bpe: &Bpe, left: i32, right: i32) {
        if left < 0 || right < 0 {
            return;
        }
        let (lid, rid) = (
            self.symbols[left as usize].id,
            self.symbols[right as usize].id,
        );
        if let Some(&(rank, _)) = bpe.merges.get(&(lid, rid)) {
            self.queue.push(Reverse(Pair {
                rank,
                left: left as u32,
                right: right as u32,
                left_id: lid,
                right_id: rid,
            }));
        }
    }
}
