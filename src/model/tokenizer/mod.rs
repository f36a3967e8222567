//! SentencePiece (SPM) tokenizer with llama.cpp's exact semantics (`tokenizer.ggml.model =
//! "llama"`), plus a streaming UTF-8 decoder.
//!
//! Encoding follows `llama_vocab::impl::tokenize` for SPM vocabularies:
//!
//! 1. **Special-token partition.** Every CONTROL, USER_DEFINED and UNKNOWN token is a candidate
//!    (CONTROL/UNKNOWN only when `parse_special`; USER_DEFINED always). Candidates are taken
//!    longest text first (ties: lower id first); each one splits every still-raw fragment at all
//!    of its non-overlapping occurrences, left to right.
//! 2. BOS when `add_special && add_bos`.
//! 3. Each raw fragment: optional space prefix (`add_space_prefix`), every `' '` becomes `"▁"`,
//!    then the SPM bigram merge: symbols are UTF-8 characters; every adjacent pair whose
//!    concatenation is a vocabulary token goes on a max-heap (higher score first, ties: smaller
//!    left index first); stale entries are skipped; merged symbols are emitted as their token id,
//!    unmerged characters missing from the vocabulary fall back to byte tokens `<0xXX>`.
//! 4. EOS when `add_special && add_eos`.
//!
//! # Vocabulary storage
//!
//! A 262 144-token vocabulary has to live in a browser tab, so there is no `Vec<String>`:
//!
//! * all token texts are concatenated in one byte arena (`Vec<u8>`) with `n + 1` `u32` offsets
//!   (4 bytes per token plus the text itself);
//! * scores (`f32`, 4 B), GGUF types (1 B) and llama.cpp attribute bits (1 B) are parallel arrays;
//! * text → id is an open-addressing hash table of `u32` ids keyed by a hash of the arena text
//!   (power-of-two capacity ≥ 1.5 n: 8 B per token for Gemma's 262 144 tokens, load 0.5);
//! * the special tokens get a second, much smaller table plus, per first byte, the distinct
//!   lengths to try, so the partition costs a few hash probes per input byte instead of one
//!   substring search per special token.
//!
//! That is about 18 bytes per token plus the text (≈ 7 MB for Gemma 3).

mod bpe;
mod pre_tokenizer;
mod spm;
mod stream;
mod unicode_tables;

pub use pre_tokenizer::{pre_tokenize, supported_names as supported_pre_tokenizers};
pub use stream::StreamDecoder;

use spm::SpmSession;
use std::borrow::Cow;

use crate::gguf::StrArray;
use crate::storage::{try_vec, try_with_capacity};
use crate::{Error, Result};

/// GGUF `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TokenType {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
}

impl TokenType {
    /// Maps a GGUF type id; ids outside `0..=6` are [`TokenType::Undefined`].
    pub fn from_gguf(value: i32) -> TokenType {
        match value {
            1 => TokenType::Normal,
            2 => TokenType::Unknown,
            3 => TokenType::Control,
            4 => TokenType::UserDefined,
            5 => TokenType::Unused,
            6 => TokenType::Byte,
            _ => TokenType::Undefined,
        }
    }

    /// llama.cpp's initial attribute bits for this type.
    fn attr(self) -> u8 {
        match self {
            TokenType::Undefined => 0,
            TokenType::Normal => ATTR_NORMAL,
            TokenType::Unknown => ATTR_UNKNOWN,
            TokenType::Control => ATTR_CONTROL,
            TokenType::UserDefined => ATTR_USER_DEFINED,
            TokenType::Unused => ATTR_UNUSED,
            TokenType::Byte => ATTR_BYTE,
        }
    }
}

// llama.cpp `llama_token_attr` bits (LSTRIP/RSTRIP are never set for SPM models and not stored).
const ATTR_UNKNOWN: u8 = 1;
const ATTR_UNUSED: u8 = 2;
const ATTR_NORMAL: u8 = 4;
const ATTR_CONTROL: u8 = 8;
const ATTR_USER_DEFINED: u8 = 16;
const ATTR_BYTE: u8 = 32;
/// Whitespace after the token is dropped (llama.cpp `LLAMA_TOKEN_ATTR_RSTRIP`).
const ATTR_RSTRIP: u8 = 64;
const ATTR_SPECIAL: u8 = ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN;

/// "No id" marker inside the compact tables.
const NONE: u32 = u32::MAX;

/// The token llama.cpp (and the Gemma chat format) uses to end a turn.
const END_OF_TURN: &str = "<end_of_turn>";

/// Texts llama.cpp's `load` treats as end of generation whatever the file says, forcing them
/// CONTROL: end-of-turn markers of the common chat formats, `</s>`, and Qwen's FIM pad, repo
/// and file-separator tokens.
const EOG_TEXTS: [&str; 16] = [
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "</s>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
];

/// Special ids and flags, as read from the GGUF `tokenizer.ggml.*` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenizerConfig {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// End of turn; when `None`, `<end_of_turn>` is used if the vocabulary has it.
    pub eot: Option<u32>,
    pub unk: Option<u32>,
    pub pad: Option<u32>,
    pub add_bos: bool,
    pub add_eos: bool,
    pub add_space_prefix: bool,
    /// Phi-3's rule (llama.cpp gives it to files whose `general.name` contains "phi3" or
    /// "phi-3"): whitespace right after a special token is dropped, except after `<unk>`, `<s>`
    /// and `<|endoftext|>`; `</s>` strips too.
    pub rstrip_specials: bool,
}

/// An SPM tokenizer over a GGUF vocabulary. Cheap to share behind an `Arc`; every method takes
/// `&self`.
#[derive(Clone)]
pub struct Tokenizer {
    /// All token texts, concatenated.
    arena: Vec<u8>,
    /// `arena[offsets[i]..offsets[i + 1]]` is the text of token `i`.
    offsets: Vec<u32>,
    scores: Vec<f32>,
    types: Vec<TokenType>,
    /// llama.cpp attribute bits after the load-time fixups.
    attrs: Vec<u8>,
    /// Text → id (the last id wins for duplicate texts, like llama.cpp's `token_to_id`).
    index: TextIndex,
    specials: Specials,
    /// Id emitted for each byte by the byte fallback (`NONE`: no token, the byte is dropped).
    byte_tokens: Box<[u32; 256]>,
    config: TokenizerConfig,
    /// End-of-generation ids, sorted.
    eog: Vec<u32>,
    /// Byte-level BPE (`tokenizer.ggml.model = "gpt2"`); `None`: SentencePiece.
    bpe: Option<Box<bpe::Bpe>>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("special_tokens", &self.specials.count)
            .field("config", &self.config)
            .field("eog", &self.eog)
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Builds the tokenizer from the GGUF arrays `tokenizer.ggml.tokens`, `scores` and
    /// `token_type`. `scores` and `types` may be empty when the GGUF lacks them (llama.cpp then
    /// uses score 0 and type NORMAL); otherwise they must have one entry per token.
    ///
    /// Load-time fixups, as llama.cpp: empty texts become `[EMPTY_<id>]`; `<end_of_turn>` becomes
    /// the EOT id when `config.eot` is `None`, is forced CONTROL and is end-of-generation; CONTROL
    /// tokens whose text contains `unused` also get the UNUSED attribute.
    ///
    /// Errors: [`Error::MissingMetadata`] for an empty vocabulary, arrays of the wrong length, a
    /// special id outside the vocabulary, or `add_bos`/`add_eos` without the id to add.
    pub fn new(
        tokens: impl Into<StrArray>,
        scores: Vec<f32>,
        types: Vec<i32>,
        config: TokenizerConfig,
    ) -> Result<Tokenizer> {
        let tokens: StrArray = tokens.into();
        let n = tokens.len();
        let (scores, types) = checked_arrays(&tokens, scores, types)?;
        check_config(&config, n)?;
        let (arena, offsets) = text_arena(tokens)?;
        let attrs: Vec<u8> = types.iter().map(|t| t.attr()).collect();
        let mut tok = Tokenizer {
            arena,
            offsets,
            scores,
            types,
            attrs,
            index: TextIndex::with_capacity(n),
            specials: Specials::default(),
            byte_tokens: Box::new([NONE; 256]),
            config,
            eog: Vec::new(),
            bpe: None,
        };
        tok.index_texts();
        tok.text_fixups();
        tok.byte_fallback();
        if tok.config.rstrip_specials {
            tok.set_phi3_rstrip();
        }
        tok.specials = Specials::build(&tok);
        Ok(tok)
    }

    /// Text → id for every token (the last id wins for duplicate texts, as in llama.cpp).
    fn index_texts(&mut self) {
        for id in 0..self.vocab_size() as u32 {
            let (arena, offsets) = (&self.arena, &self.offsets);
            self.index.insert(text_of(arena, offsets, id), id, |v| {
                text_of(arena, offsets, v)
            });
        }
    }

    /// llama.cpp `load`'s text-based fixups: EOT detection, UNUSED for CONTROL "unused" tokens,
    /// and the end-of-generation set (EOS, EOT and [`EOG_TEXTS`], forced CONTROL).
    fn text_fixups(&mut self) {
        let n = self.vocab_size();
        if let Some(id) = self.token_id(END_OF_TURN) {
            self.config.eot.get_or_insert(id);
        }
        for id in 0..n {
            if self.attrs[id] & ATTR_CONTROL != 0
                && contains(text_of(&self.arena, &self.offsets, id as u32), b"unused")
            {
                self.attrs[id] |= ATTR_UNUSED;
            }
        }
        let by_text: Vec<u32> = EOG_TEXTS.iter().filter_map(|t| self.token_id(t)).collect();
        for &id in &by_text {
            self.attrs[id as usize] |= ATTR_CONTROL;
        }
        self.eog = [self.config.eos, self.config.eot]
            .into_iter()
            .flatten()
            .chain(by_text)
            .collect();
        self.eog.sort_unstable();
        self.eog.dedup();
    }

    /// The byte fallback table (llama.cpp `byte_to_token`): `<0xXX>`, else the 1-byte text,
    /// else (where llama.cpp would throw) UNK if there is one, else nothing.
    fn byte_fallback(&mut self) {
        for b in 0..256usize {
            let hex = format!("<0x{b:02X}>");
            let id = self
                .lookup(hex.as_bytes())
                .or_else(|| self.lookup(&[b as u8]))
                .or(self.config.unk)
                .unwrap_or(NONE);
            self.byte_tokens[b] = id;
        }
    }

    /// This tokenizer as byte-level BPE (GGUF `tokenizer.ggml.model = "gpt2"`): `merges` are
    /// the `tokenizer.ggml.merges` strings in rank order, `pre` the `tokenizer.ggml.pre` name.
    /// No space prefix is added and the byte tokens are the GPT-2 byte map's characters.
    pub fn into_bpe(mut self, merges: &StrArray, pre: &str) -> Result<Tokenizer> {
        self.config.add_space_prefix = false;
        for b in 0..=255u8 {
            let c = bpe::byte_char(b);
            self.byte_tokens[b as usize] = self
                .lookup(c.encode_utf8(&mut [0; 4]).as_bytes())
                .unwrap_or(NONE);
        }
        self.bpe = Some(Box::new(bpe::Bpe::new(&self, merges, pre)?));
        Ok(self)
    }

    /// Phi-3's rstrip attributes (see [`TokenizerConfig::rstrip_specials`]).
    fn set_phi3_rstrip(&mut self) {
        for a in self.attrs.iter_mut().filter(|a| **a & ATTR_SPECIAL != 0) {
            *a |= ATTR_RSTRIP;
        }
        for (text, on) in [
            ("</s>", true),
            ("<unk>", false),
            ("<s>", false),
            ("<|endoftext|>", false),
        ] {
            if let Some(id) = self.token_id(text) {
                let a = &mut self.attrs[id as usize];
                *a = if on {
                    *a | ATTR_RSTRIP
                } else {
                    *a & !ATTR_RSTRIP
                };
            }
        }
    }

    /// `"bpe"` (byte-level BPE) or `"spm"` (SentencePiece).
    pub fn kind(&self) -> &'static str {
        if self.bpe.is_some() {
            "bpe"
        } else {
            "spm"
        }
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.scores.len()
    }

    /// The configuration, with `eot` filled in when `<end_of_turn>` was detected.
    pub fn config(&self) -> &TokenizerConfig {
        &self.config
    }

    pub fn bos(&self) -> Option<u32> {
        self.config.bos
    }

    pub fn eos(&self) -> Option<u32> {
        self.config.eos
    }

    pub fn eot(&self) -> Option<u32> {
        self.config.eot
    }

    /// Whether generation should stop at `id`: EOS, EOT or `<end_of_turn>`.
    pub fn is_eog(&self, id: u32) -> bool {
        self.eog.binary_search(&id).is_ok()
    }

    /// The end-of-generation ids, sorted.
    pub fn eog_ids(&self) -> &[u32] {
        &self.eog
    }

    /// The id whose text is exactly `text` (the last one for duplicate texts).
    pub fn token_id(&self, text: &str) -> Option<u32> {
        self.lookup(text.as_bytes())
    }

    /// The raw vocabulary text of `id` (`▁` not replaced), or `None` when out of range.
    pub fn token_text(&self, id: u32) -> Option<&str> {
        if id as usize >= self.vocab_size() {
            return None;
        }
        std::str::from_utf8(self.text(id)).ok()
    }

    /// The GGUF type of `id`, or `None` when out of range.
    pub fn token_type(&self, id: u32) -> Option<TokenType> {
        self.types.get(id as usize).copied()
    }

    /// The merge score of `id`, or `None` when out of range.
    pub fn score(&self, id: u32) -> Option<f32> {
        self.scores.get(id as usize).copied()
    }

    /// Heap bytes held by the vocabulary tables (for memory budgeting).
    pub fn memory_bytes(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * 4
            + self.scores.capacity() * 4
            + self.types.capacity()
            + self.attrs.capacity()
            + self.index.slots.capacity() * 4
            + self.specials.memory_bytes()
            + 256 * 4
            + self.eog.capacity() * 4
    }

    /// Tokenizes `text` (llama.cpp `tokenize(text, add_special, parse_special)`).
    ///
    /// `add_special` adds BOS/EOS as the config asks; `parse_special` lets CONTROL tokens such as
    /// `<start_of_turn>` written in the text become their single id (USER_DEFINED tokens are
    /// always split out).
    pub fn encode(&self, text: &str, add_special: bool, parse_special: bool) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 2);
        if add_special && self.config.add_bos {
            out.extend(self.config.bos);
        }
        let mut session = SpmSession::default();
        let mut buf = String::new();
        let mut prev_special = true;
        for frag in self.partition(text, parse_special) {
            match frag {
                Fragment::Token(id) => {
                    out.push(id);
                    prev_special = true;
                }
                Fragment::Raw(start, end) if self.bpe.is_some() => {
                    if let Some(bpe) = &self.bpe {
                        bpe.tokenize(self, &text[start..end], &mut out);
                    }
                    prev_special = false;
                }
                Fragment::Raw(start, end) => {
                    buf.clear();
                    if self.config.add_space_prefix && prev_special {
                        buf.push(' ');
                    }
                    buf.push_str(&text[start..end]);
                    let escaped = buf.replace(' ', "\u{2581}");
                    session.tokenize(self, escaped.as_bytes(), &mut out);
                    prev_special = false;
                }
            }
        }
        if add_special && self.config.add_eos {
            out.extend(self.config.eos);
        }
        out
    }

    /// The bytes of one token, as llama.cpp's `token_to_piece(id, special)`: CONTROL and
    /// UNKNOWN tokens are empty unless `special`; USER_DEFINED tokens are their raw text; NORMAL
    /// tokens have `▁` replaced by a space; BYTE tokens are their single byte; UNUSED and
    /// UNDEFINED tokens are empty.
    pub fn token_bytes(&self, id: u32, special: bool) -> Result<Cow<'_, [u8]>> {
        self.piece(id, special, "token_bytes")
    }

    /// Decodes `ids` to text (llama.cpp `detokenize` with `remove_special = false`): the pieces
    /// are concatenated and invalid UTF-8 is replaced by U+FFFD. With `add_space_prefix`, one
    /// leading space of the first piece is removed.
    pub fn decode(&self, ids: &[u32], special: bool) -> Result<String> {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        for (i, &id) in ids.iter().enumerate() {
            let piece = self.piece(id, special, "decode")?;
            let piece: &[u8] = &piece;
            if i == 0 && self.config.add_space_prefix && piece.first() == Some(&b' ') {
                bytes.extend_from_slice(&piece[1..]);
            } else {
                bytes.extend_from_slice(piece);
            }
        }
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn piece(&self, id: u32, special: bool, op: &'static str) -> Result<Cow<'_, [u8]>> {
        let Some(&attr) = self.attrs.get(id as usize) else {
            return Err(Error::IndexOutOfRange {
                op,
                index: id as i64,
                size: self.vocab_size(),
            });
        };
        if !special && attr & (ATTR_UNKNOWN | ATTR_CONTROL) != 0 {
            return Ok(Cow::Borrowed(&[]));
        }
        let text = self.text(id);
        if attr & ATTR_SPECIAL != 0 {
            Ok(Cow::Borrowed(text))
        } else if attr & ATTR_NORMAL != 0 && self.bpe.is_some() {
            Ok(Cow::Owned(bpe::unmap(text)))
        } else if attr & ATTR_NORMAL != 0 {
            Ok(unescape_whitespace(text))
        } else if attr & ATTR_BYTE != 0 {
            let b = byte_value(text) as usize;
            Ok(Cow::Borrowed(&BYTE_VALUES[b..b + 1]))
        } else {
            Ok(Cow::Borrowed(&[]))
        }
    }

    fn text(&self, id: u32) -> &[u8] {
        text_of(&self.arena, &self.offsets, id)
    }

    fn lookup(&self, key: &[u8]) -> Option<u32> {
        self.index.find(key, |id| self.text(id))
    }

    /// Splits `text` at special tokens with llama.cpp's `tokenizer_st_partition` semantics.
    ///
    /// llama.cpp processes the special tokens one at a time (longest first) and splits every raw
    /// fragment at each non-overlapping occurrence, left to right. Raw fragments are exactly the
    /// maximal runs of bytes no accepted token covers, so the same result comes from: collect
    /// every occurrence of every candidate in the whole text, visit them by (length desc, id asc,
    /// position asc), and accept an occurrence iff none of its bytes is already covered.
    fn partition(&self, text: &str, parse_special: bool) -> Vec<Fragment> {
        let bytes = text.as_bytes();
        let mut frags = Vec::new();
        if bytes.is_empty() {
            return frags;
        }
        let sp = &self.specials;
        let lens = if parse_special {
            &sp.lens_all
        } else {
            &sp.lens_user
        };
        // (length, id, position) of every occurrence.
        let mut found: Vec<(u32, u32, u32)> = Vec::new();
        if sp.count > 0 {
            for pos in 0..bytes.len() {
                for &len in &lens[bytes[pos] as usize] {
                    let end = pos + len as usize;
                    if end > bytes.len() {
                        continue;
                    }
                    if let Some(e) = sp.find(&bytes[pos..end], self) {
                        let entry = &sp.entries[e as usize];
                        let id = if parse_special { entry.any } else { entry.user };
                        if id != NONE {
                            found.push((len, id, pos as u32));
                        }
                    }
                }
            }
        }
        if found.is_empty() {
            frags.push(Fragment::Raw(0, bytes.len()));
            return frags;
        }
        found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut covered = vec![false; bytes.len()];
        let mut accepted: Vec<(usize, usize, u32)> = Vec::new();
        for &(len, id, pos) in &found {
            let (start, end) = (pos as usize, pos as usize + len as usize);
            if covered[start..end].iter().any(|&c| c) {
                continue;
            }
            covered[start..end].iter_mut().for_each(|c| *c = true);
            accepted.push((start, end, id));
        }
        accepted.sort_unstable_by_key(|a| a.0);
        let mut at = 0;
        for (k, &(start, end, id)) in accepted.iter().enumerate() {
            if start > at {
                frags.push(Fragment::Raw(at, start));
            }
            frags.push(Fragment::Token(id));
            at = end;
            if self.attrs[id as usize] & ATTR_RSTRIP != 0 {
                // C `isspace`, as llama.cpp strips, up to the next special token.
                let limit = accepted.get(k + 1).map_or(bytes.len(), |n| n.0);
                while at < limit && matches!(bytes[at], b' ' | b'\t'..=b'\r') {
                    at += 1;
                }
            }
        }
        if at < bytes.len() {
            frags.push(Fragment::Raw(at, bytes.len()));
        }
        frags
    }
}

/// `scores` and `types` with one entry per token (defaults when the file has none).
fn checked_arrays(
    tokens: &StrArray,
    scores: Vec<f32>,
    types: Vec<i32>,
) -> Result<(Vec<f32>, Vec<TokenType>)> {
    let n = tokens.len();
    if n == 0 {
        return Err(meta(
            "tokenizer.ggml.tokens",
            "the vocabulary is empty".into(),
        ));
    }
    if n >= NONE as usize {
        return Err(meta(
            "tokenizer.ggml.tokens",
            format!("{n} tokens do not fit 32-bit ids"),
        ));
    }
    let scores = if scores.is_empty() {
        try_vec(n, 0.0)?
    } else if scores.len() == n {
        scores
    } else {
        return Err(meta(
            "tokenizer.ggml.scores",
            format!("{} scores for {n} tokens", scores.len()),
        ));
    };
    let types: Vec<TokenType> = if types.is_empty() {
        try_vec(n, TokenType::Normal)?
    } else if types.len() == n {
        types.into_iter().map(TokenType::from_gguf).collect()
    } else {
        return Err(meta(
            "tokenizer.ggml.token_type",
            format!("{} token types for {n} tokens", types.len()),
        ));
    };
    Ok((scores, types))
}

/// Special ids inside the vocabulary, and the ids `add_bos` / `add_eos` need.
fn check_config(config: &TokenizerConfig, n: usize) -> Result<()> {
    let id_keys = [
        ("tokenizer.ggml.bos_token_id", config.bos),
        ("tokenizer.ggml.eos_token_id", config.eos),
        ("tokenizer.ggml.eot_token_id", config.eot),
        ("tokenizer.ggml.unknown_token_id", config.unk),
        ("tokenizer.ggml.padding_token_id", config.pad),
    ];
    for (key, id) in id_keys {
        if let Some(id) = id {
            if id as usize >= n {
                return Err(meta(
                    key,
                    format!("token id {id} is outside the vocabulary of {n} tokens"),
                ));
            }
        }
    }
    if config.add_bos && config.bos.is_none() {
        return Err(meta(
            "tokenizer.ggml.bos_token_id",
            "add_bos is set but there is no BOS id".into(),
        ));
    }
    if config.add_eos && config.eos.is_none() {
        return Err(meta(
            "tokenizer.ggml.eos_token_id",
            "add_eos is set but there is no EOS id".into(),
        ));
    }
    Ok(())
}

/// All token texts in one arena with `n + 1` offsets; empty texts are renamed as llama.cpp does,
/// so every text is non-empty. Without empty texts the array's own text is the arena (no copy:
/// in wasm a transient copy of the vocabulary would stay resident).
fn text_arena(tokens: StrArray) -> Result<(Vec<u8>, Vec<u32>)> {
    let n = tokens.len();
    let total = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if t.is_empty() {
                empty_name(i).len()
            } else {
                t.len()
            }
        })
        .try_fold(0usize, |acc, len| acc.checked_add(len))
        .filter(|&t| t <= u32::MAX as usize);
    let Some(total) = total else {
        return Err(meta(
            "tokenizer.ggml.tokens",
            "the token texts exceed the 4 GiB arena".into(),
        ));
    };
    let mut offsets = try_with_capacity(n + 1)?;
    offsets.push(0u32);
    if tokens.iter().all(|t| !t.is_empty()) {
        let (text, ends) = tokens.into_parts();
        offsets.extend(ends.iter().map(|&e| e as u32)); // e <= total <= u32::MAX
        return Ok((text.into_bytes(), offsets));
    }
    let mut arena = try_with_capacity(total)?;
    for (i, t) in tokens.iter().enumerate() {
        if t.is_empty() {
            arena.extend_from_slice(empty_name(i).as_bytes());
        } else {
            arena.extend_from_slice(t.as_bytes());
        }
        offsets.push(arena.len() as u32);
    }
    Ok((arena, offsets))
}

fn meta(key: &str, reason: String) -> Error {
    Error::MissingMetadata {
        key: key.to_string(),
        reason,
    }
}

fn empty_name(id: usize) -> String {
    format!("[EMPTY_{id}]")
}

fn text_of<'a>(arena: &'a [u8], offsets: &[u32], id: u32) -> &'a [u8] {
    let i = id as usize;
    &arena[offsets[i] as usize..offsets[i + 1] as usize]
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `"▁"` (U+2581) in UTF-8.
const SPACE_MARK: &[u8] = "\u{2581}".as_bytes();

fn unescape_whitespace(text: &[u8]) -> Cow<'_, [u8]> {
    if !contains(text, SPACE_MARK) {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with(SPACE_MARK) {
            out.push(b' ');
            i += SPACE_MARK.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// The byte of a BYTE token, as llama.cpp's `strtol(text + 3, NULL, 16)` truncated to a char:
/// the hex digits after `<0x`.
fn byte_value(text: &[u8]) -> u8 {
    let mut v: u32 = 0;
    for &c in text.iter().skip(3) {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        v = v.wrapping_mul(16).wrapping_add(d as u32);
    }
    v as u8
}

/// `BYTE_VALUES[b] == b`: backing store for the one-byte pieces of BYTE tokens.
static BYTE_VALUES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i as u8;
        i += 1;
    }
    t
};

/// Length of the UTF-8 sequence starting with `lead` (llama.cpp `unicode_len_utf8`).
fn utf8_len(lead: u8) -> usize {
    match lead >> 4 {
        0xC | 0xD => 2,
        0xE => 3,
        0xF => 4,
        _ => 1,
    }
}

// ---------------------------------------------------------------------------------------------
// Hashing and the open-addressing text table

/// A 64-bit multiplicative hash over 8-byte words with a murmur3 finalizer.
fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// Linear-probing hash set of `u32` values whose keys (texts) live elsewhere; a slot holds
/// `value + 1`, 0 is empty. Capacity is a power of two ≥ 1.5 × entries.
#[derive(Clone, Default)]
struct TextIndex {
    slots: Vec<u32>,
}

impl TextIndex {
    fn with_capacity(n: usize) -> Self {
        let cap = (n + n / 2 + 1).next_power_of_two().max(8);
        TextIndex {
            slots: vec![0; cap],
        }
    }

    /// The slot holding `key`, or the empty slot where it would go.
    fn probe<'a>(&self, key: &[u8], text: impl Fn(u32) -> &'a [u8]) -> (usize, Option<u32>) {
        let mask = self.slots.len() - 1;
        let mut i = hash_bytes(key) as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                return (i, None);
            }
            if text(s - 1) == key {
                return (i, Some(s - 1));
            }
            i = (i + 1) & mask;
        }
    }

    fn find<'a>(&self, key: &[u8], text: impl Fn(u32) -> &'a [u8]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        self.probe(key, text).1
    }

    /// Inserts `value` under `key`, replacing a value with the same key. The caller sized the
    /// table, so there is always an empty slot.
    fn insert<'a>(&mut self, key: &[u8], value: u32, text: impl Fn(u32) -> &'a [u8]) {
        let (slot, _) = self.probe(key, text);
        self.slots[slot] = value + 1;
    }
}

/// One distinct special-token text.
#[derive(Clone, Copy)]
struct SpecialEntry {
    /// Lowest special id with this text (matched when `parse_special`).
    any: u32,
    /// Lowest USER_DEFINED-only id with this text (matched when not `parse_special`), or NONE.
    user: u32,
}

/// The special tokens (CONTROL | USER_DEFINED | UNKNOWN attributes) for the partition.
#[derive(Clone, Default)]
struct Specials {
    /// Number of special ids.
    count: usize,
    entries: Vec<SpecialEntry>,
    /// Text → entry index (the text is that of `entries[i].any`).
    index: TextIndex,
    /// Per first byte: the distinct text lengths of matchable specials, longest first.
    lens_all: Vec<Vec<u32>>,
    lens_user: Vec<Vec<u32>>,
}

impl Specials {
    fn build(tok: &Tokenizer) -> Specials {
        let ids: Vec<u32> = (0..tok.vocab_size() as u32)
            .filter(|&id| tok.attrs[id as usize] & ATTR_SPECIAL != 0)
            .collect();
        let mut sp = Specials {
            count: ids.len(),
            entries: Vec::new(),
            index: TextIndex::with_capacity(ids.len()),
            lens_all: vec![Vec::new(); 256],
            lens_user: vec![Vec::new(); 256],
        };
        // Ascending ids, so the first id seen for a text is the lowest.
        for &id in &ids {
            let text = tok.text(id);
            let user_only = tok.attrs[id as usize] & (ATTR_CONTROL | ATTR_UNKNOWN) == 0;
            let entries = &mut sp.entries;
            let (slot, found) = sp.index.probe(text, |e| tok.text(entries[e as usize].any));
            match found {
                Some(e) => {
                    let entry = &mut entries[e as usize];
                    if user_only && entry.user == NONE {
                        entry.user = id;
                    }
                }
                None => {
                    sp.index.slots[slot] = entries.len() as u32 + 1;
                    entries.push(SpecialEntry {
                        any: id,
                        user: if user_only { id } else { NONE },
                    });
                }
            }
            let first = text[0] as usize; // texts are never empty
            sp.lens_all[first].push(text.len() as u32);
            if user_only {
                sp.lens_user[first].push(text.len() as u32);
            }
        }
        for l in sp.lens_all.iter_mut().chain(sp.lens_user.iter_mut()) {
            l.sort_unstable_by(|a, b| b.cmp(a));
            l.dedup();
            l.shrink_to_fit();
        }
        sp.entries.shrink_to_fit();
        sp
    }

    fn find(&self, key: &[u8], tok: &Tokenizer) -> Option<u32> {
        self.index
            .find(key, |e| tok.text(self.entries[e as usize].any))
    }

    fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<SpecialEntry>()
            + self.index.slots.capacity() * 4
            + self
                .lens_all
                .iter()
                .chain(&self.lens_user)
                .map(|l| l.capacity() * 4 + std::mem::size_of::<Vec<u32>>())
                .sum::<usize>()
    }
}

enum Fragment {
    /// Byte range of the input text.
    Raw(usize, usize),
    Token(u32),
}
