//! What the network's output classes mean: the `lstm-unicharset` (Tesseract's text list of
//! characters) and the `lstm-recoder` (`UnicharCompress`), which gives each character its
//! sequence of output codes — one code for Latin, several for scripts with many characters.

use super::serial::{invalid, Reader};
use crate::error::Result;
use std::collections::HashMap;

/// Longest code sequence Tesseract's recoder writes (`RecodedCharID::kMaxCodeLen`).
const MAX_CODE_LEN: usize = 9;

/// The recognizer's characters and their output codes.
#[derive(Debug)]
pub struct Charset {
    /// UTF-8 text per unichar id; id 0 is the space.
    pub unichars: Vec<String>,
    /// Full code sequence → unichar id (a later unichar with the same codes wins, as in
    /// Tesseract's `UnicharCompress::SetupDecoder`).
    decoder: HashMap<Vec<u32>, usize>,
    /// Prefix → the codes that complete a character after it, in first-seen order.
    final_codes: HashMap<Vec<u32>, Vec<u32>>,
    /// Prefix → the codes that extend it to a longer prefix, in first-seen order.
    next_codes: HashMap<Vec<u32>, Vec<u32>>,
    /// Codes `0..code_range` are the network's outputs.
    pub code_range: usize,
}

impl Charset {
    /// Reads the two entries; `unicharset` is text, `recoder` binary.
    pub(crate) fn read(unicharset: &mut Reader, recoder: &mut Reader) -> Result<Charset> {
        let unichars = read_unicharset(unicharset)?;
        let count = recoder.count("the recoder's character count", 9)?;
        if count != unichars.len() {
            return Err(recoder.error(format!(
                "the recoder codes {count} characters, the unicharset has {}",
                unichars.len()
            )));
        }
        let mut cs = Charset {
            unichars,
            decoder: HashMap::new(),
            final_codes: HashMap::new(),
            next_codes: HashMap::new(),
            code_range: 0,
        };
        for id in 0..count {
            let codes = read_code(recoder)?;
            cs.add(id, codes);
        }
        Ok(cs)
    }

    /// Registers one character's code sequence in the three tables.
    fn add(&mut self, id: usize, codes: Vec<u32>) {
        let Some((&last, prefix)) = codes.split_last() else {
            return;
        };
        self.code_range = self
            .code_range
            .max(codes.iter().max().map_or(0, |&c| c as usize + 1));
        let new_prefix = !self.final_codes.contains_key(prefix);
        push_unique(self.final_codes.entry(prefix.to_vec()).or_default(), last);
        if new_prefix {
            // Each shorter prefix learns the code that leads on, until one already knew it.
            for len in (0..prefix.len()).rev() {
                let known = self.next_codes.contains_key(&prefix[..len]);
                push_unique(
                    self.next_codes.entry(prefix[..len].to_vec()).or_default(),
                    prefix[len],
                );
                if known {
                    break;
                }
            }
        }
        self.decoder.insert(codes, id);
    }

    /// The unichar a complete code sequence stands for.
    pub fn lookup(&self, codes: &[u32]) -> Option<usize> {
        self.decoder.get(codes).copied()
    }

    /// Codes that complete a character after `prefix`.
    pub fn final_codes(&self, prefix: &[u32]) -> &[u32] {
        self.final_codes.get(prefix).map_or(&[], Vec::as_slice)
    }

    /// Codes that continue `prefix` without completing a character.
    pub fn next_codes(&self, prefix: &[u32]) -> &[u32] {
        self.next_codes.get(prefix).map_or(&[], Vec::as_slice)
    }
}

fn push_unique(list: &mut Vec<u32>, code: u32) {
    if !list.contains(&code) {
        list.push(code);
    }
}

/// One `RecodedCharID`: a normalisation flag, a length, the codes.
fn read_code(r: &mut Reader) -> Result<Vec<u32>> {
    r.i8("a code's normalisation flag")?;
    let at = r.offset();
    let len = r.i32("a code length")?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_CODE_LEN)
        .ok_or_else(|| invalid(at, format!("code length {len} is not 0..={MAX_CODE_LEN}")))?;
    let mut codes = Vec::with_capacity(len);
    for _ in 0..len {
        let at = r.offset();
        let c = r.i32("a code")?;
        let c = u32::try_from(c)
            .ok()
            .filter(|&c| c < 1 << 20)
            .ok_or_else(|| invalid(at, format!("code {c} is out of range")))?;
        codes.push(c);
    }
    Ok(codes)
}

/// The unicharset's text form: a count line, then per character its UTF-8 text (`NULL` is the
/// space) followed by properties the recognizer does not need.
fn read_unicharset(r: &mut Reader) -> Result<Vec<String>> {
    let at = r.offset();
    let bytes = r.take(r.remaining(), "the unicharset")?;
    let text =
        std::str::from_utf8(bytes).map_err(|_| invalid(at, "the unicharset is not UTF-8"))?;
    let mut lines = text.lines();
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .filter(|&n| n > 0 && n <= 1 << 20)
        .ok_or_else(|| invalid(at, "the unicharset does not start with a character count"))?;
    let mut out = Vec::with_capacity(count.min(text.len()));
    for (i, line) in lines.take(count).enumerate() {
        let field = line.split(' ').next().unwrap_or("");
        if field.is_empty() {
            return Err(invalid(at, format!("unicharset line {} is empty", i + 2)));
        }
        out.push(if field == "NULL" {
            " ".to_string()
        } else {
            field.to_string()
        });
    }
    if out.len() != count {
        return Err(invalid(
            at,
            format!(
                "the unicharset promises {count} characters and lists {}",
                out.len()
            ),
        ));
    }
    Ok(out)
}
