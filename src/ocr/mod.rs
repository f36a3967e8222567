//! OCR of printed text lines with Tesseract's own LSTM models (`.traineddata`, the integer
//! "fast" kind Debian and tessdata_fast ship), run on this crate's Tensor API with no
//! Tesseract code.
//!
//! The pipeline follows Tesseract 5 for `--oem 1 --psm 7`: the line's ink box
//! ([`image`]), Leptonica's scaling to the network's height ([`scale`]), the layer tree read
//! from the file ([`network`]) run as Tensor ops ([`forward`]), and the recode beam search
//! over the softmax ([`decode`]) without the dictionaries. [`Recognizer`] is the entry point;
//! [`page`] splits a simple page into lines.

mod blobs;
mod charset;
mod decode;
mod forward;
pub mod image;
pub mod network;
pub mod page;
mod rand;
mod recognizer;
pub mod scale;
mod serial;
mod traineddata;
mod weights;

pub use charset::Charset;
pub use image::GreyImage;
pub use rand::TessRand;
pub use recognizer::{CharResult, LineResult, PageResult, Recognizer};
pub use traineddata::{Entry, Traineddata};
pub use weights::Int8Matrix;
