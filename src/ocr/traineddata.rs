//! The `.traineddata` container (Tesseract's `TessdataManager`): an `i32` entry count, one
//! `i64` offset per entry (`-1` = absent), then the entries back to back. An entry's size is
//! the distance to the next present entry (or the end of the file).

use super::serial::{invalid, Reader};
use crate::error::Result;

/// Entry indices of the container's table; only the LSTM recognizer's entries are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Entry {
    Lstm = 17,
    LstmPuncDawg = 18,
    LstmSystemDawg = 19,
    LstmNumberDawg = 20,
    LstmUnicharset = 21,
    LstmRecoder = 22,
    Version = 23,
}

/// Upper bound on the table size: today's Tesseract writes 24 entries; a count far above that
/// is a damaged or foreign file, not a newer one.
const MAX_ENTRIES: usize = 64;

/// The entries of one traineddata file, borrowed from its bytes.
#[derive(Debug)]
pub struct Traineddata<'a> {
    bytes: &'a [u8],
    /// `(offset, len)` per table slot; `None` when the slot is absent.
    entries: Vec<Option<(usize, usize)>>,
}

impl<'a> Traineddata<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(bytes, 0);
        let n = r.i32("the entry count")?;
        let n = usize::try_from(n)
            .ok()
            .filter(|&n| (1..=MAX_ENTRIES).contains(&n))
            .ok_or_else(|| {
                invalid(0, format!("entry count {n} is not 1..={MAX_ENTRIES}: not a traineddata file (or a big-endian one)"))
            })?;
        let mut offsets = Vec::with_capacity(n);
        for i in 0..n {
            let at = r.offset();
            let off =
                i64::from_le_bytes(r.take(8, "the entry table")?.try_into().unwrap_or([0; 8]));
            let table_end = (4 + 8 * n) as i64;
            if off != -1 && !(table_end..=bytes.len() as i64).contains(&off) {
                return Err(invalid(
                    at,
                    format!(
                        "entry {i} starts at {off}, outside the file ({} bytes)",
                        bytes.len()
                    ),
                ));
            }
            offsets.push(usize::try_from(off).ok());
        }
        let mut entries = vec![None; n];
        for i in 0..n {
            let Some(start) = offsets[i] else { continue };
            let end = offsets[i + 1..]
                .iter()
                .flatten()
                .next()
                .copied()
                .unwrap_or(bytes.len());
            if end < start {
                return Err(invalid(
                    4 + 8 * i as u64,
                    format!("entry {i} starts at {start}, after the next entry ({end})"),
                ));
            }
            entries[i] = Some((start, end - start));
        }
        Ok(Traineddata { bytes, entries })
    }

    /// The bytes of `entry` and their file offset, or `None` when the file lacks it.
    pub fn get(&self, entry: Entry) -> Option<(&'a [u8], u64)> {
        let (start, len) = (*self.entries.get(entry as usize)?)?;
        (len > 0).then(|| (&self.bytes[start..start + len], start as u64))
    }

    /// [`Traineddata::get`] for an entry the recognizer cannot do without.
    pub(crate) fn require(&self, entry: Entry) -> Result<Reader<'a>> {
        let (bytes, base) = self.get(entry).ok_or_else(|| {
            invalid(
                0,
                format!("the file has no {entry:?} entry (a legacy-only or non-LSTM model?)"),
            )
        })?;
        Ok(Reader::new(bytes, base))
    }
}
