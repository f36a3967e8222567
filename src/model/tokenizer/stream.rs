//! Streaming decoder: token ids in, complete UTF-8 text out.

use super::Tokenizer;
use crate::Result;

/// Incremental decoder for streaming generation: push ids one at a time and get back only
/// complete UTF-8 text, never half a character. Byte sequences that can never become valid are
/// replaced by U+FFFD as soon as that is certain, so the concatenation of every `push` and the
/// final [`StreamDecoder::finish`] equals `String::from_utf8_lossy` of all the token bytes.
#[derive(Debug, Clone, Default)]
pub struct StreamDecoder {
    pending: Vec<u8>,
    special: bool,
}

impl StreamDecoder {
    /// A decoder that hides CONTROL/UNKNOWN tokens (`special = false`).
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that renders CONTROL/UNKNOWN tokens as their text when `special`.
    pub fn with_special(special: bool) -> Self {
        StreamDecoder {
            pending: Vec::new(),
            special,
        }
    }

    /// Appends the bytes of `id` and returns the text that is now complete (possibly empty).
    /// An out-of-range id is an [`Error::IndexOutOfRange`] and leaves the decoder unchanged.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        let piece = tok.piece(id, self.special, "StreamDecoder::push")?;
        self.pending.extend_from_slice(&piece);
        let mut out = String::new();
        let mut start = 0;
        loop {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    out.push_str(s);
                    start = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    if let Ok(s) = std::str::from_utf8(&self.pending[start..start + valid]) {
                        out.push_str(s);
                    }
                    match e.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            start += valid + bad;
                        }
                        None => {
                            // An incomplete character at the end: keep it for the next push.
                            start += valid;
                            break;
                        }
                    }
                }
            }
        }
        self.pending.drain(..start);
        Ok(out)
    }

    /// Flushes what is left (an incomplete character becomes U+FFFD) and resets the decoder.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }

    /// Whether bytes of an incomplete character are waiting.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}
