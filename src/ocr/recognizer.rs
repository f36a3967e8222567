//! [`Recognizer`]: a loaded traineddata model that reads lines (and simple pages) of text.

use super::charset::Charset;
use super::decode::{decode, DecodedChar};
use super::forward::forward;
use super::image::{normalise, GreyImage};
use super::network::{Kind, Layer};
use super::rand::TessRand;
use super::serial::invalid;
use super::traineddata::{Entry, Traineddata};
use crate::error::{Error, Result};
use crate::Tensor;

/// Input heights beyond this are a damaged file (Tesseract's models use 36 or 48 rows): a line
/// would be scaled to it before anything else could fail.
const MAX_INPUT_HEIGHT: usize = 256;
/// A line scaled to the network's height may hold at most this many pixels (a 36-row line
/// 116,000 columns long).
const MAX_SCALED_PIXELS: usize = 1 << 22;

/// Tesseract re-reads a line inverted when its mean best probability is below this
/// (`invert_threshold`), keeping whichever reading is more confident.
const INVERT_THRESHOLD: f32 = 0.7;
/// Word certainties are character certainties times this (`kCertaintyScale`).
const CERTAINTY_SCALE: f32 = 7.0;

/// A model ready to read text.
#[derive(Debug)]
pub struct Recognizer {
    network: Layer,
    charset: Charset,
    /// The CTC blank among the output codes.
    null_char: u32,
    /// Seeds the generator that fills the convolution's out-of-image neighbours.
    sample_iteration: i32,
    /// The VGSL spec the model was trained from, e.g. `[1,36,0,1Ct3,3,16Mp3,3Lfys48…]`.
    pub spec: String,
    /// Rows the network reads (36 for Tesseract's Latin models).
    pub input_height: usize,
    /// Image columns per output frame after the network's pooling.
    pub x_scale: usize,
}

/// One recognised character: its text, confidence (0–100, Tesseract's scale) and horizontal
/// extent in the input image's pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct CharResult {
    pub text: String,
    pub confidence: f32,
    pub x0: usize,
    pub x1: usize,
}

/// A recognised line: the text (words joined by single spaces), the line's confidence (the
/// mean word confidence, 0–100), the characters, and the box `(x0, y0, x1, y1)` read.
#[derive(Debug, Clone, PartialEq)]
pub struct LineResult {
    pub text: String,
    pub confidence: f32,
    pub chars: Vec<CharResult>,
    pub bbox: (usize, usize, usize, usize),
}

/// The lines of a page, top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct PageResult {
    pub text: String,
    pub lines: Vec<LineResult>,
}

impl Recognizer {
    /// Loads a `.traineddata` file's LSTM recognizer (the `lstm`, `lstm-unicharset` and
    /// `lstm-recoder` entries).
    pub fn from_bytes(bytes: &[u8]) -> Result<Recognizer> {
        let file = Traineddata::parse(bytes)?;
        let mut r = file.require(Entry::Lstm)?;
        let network = Layer::read(&mut r, 0)?;
        let spec = r.string("the network spec")?;
        let flags = r.i32("the training flags")?;
        r.i32("the training iteration")?;
        let sample_iteration = r.i32("the sample iteration")?;
        let at = r.offset();
        let null_char = r.i32("the null char")?;
        if flags & 1 == 0 {
            return Err(invalid(
                0,
                "a float (\"best\") model: only integer (\"fast\") models are supported",
            ));
        }
        if flags & 64 == 0 {
            return Err(invalid(
                0,
                "a model without a recoder (pre-4.0 training) is not supported",
            ));
        }
        let charset = Charset::read(
            &mut file.require(Entry::LstmUnicharset)?,
            &mut file.require(Entry::LstmRecoder)?,
        )?;
        let input_height = check_input(&network)?;
        if network.outputs != charset.code_range {
            return Err(invalid(
                at,
                format!(
                    "the network has {} outputs for {} codes",
                    network.outputs, charset.code_range
                ),
            ));
        }
        let null_char = u32::try_from(null_char)
            .ok()
            .filter(|&n| (n as usize) < network.outputs)
            .ok_or_else(|| invalid(at, format!("null char {null_char} is not an output")))?;
        let x_scale = x_scale(&network);
        Ok(Recognizer {
            network,
            charset,
            null_char,
            sample_iteration,
            spec,
            input_height,
            x_scale,
        })
    }

    /// Characters the model knows (its unicharset, with the space).
    pub fn characters(&self) -> usize {
        self.charset.unichars.len()
    }

    /// Reads one line of text. The line's ink is found and cut out as Tesseract's single-line
    /// mode does; an image without ink reads as empty text.
    pub fn recognize_line(&self, image: &GreyImage) -> Result<LineResult> {
        let Some(bbox) = image.line_box() else {
            return Ok(LineResult {
                text: String::new(),
                confidence: 0.0,
                chars: Vec::new(),
                bbox: (0, 0, 0, 0),
            });
        };
        let line = image.crop(bbox.0, bbox.1, bbox.2, bbox.3)?;
        self.recognize_cut(&line, bbox)
    }

    /// Reads an image that is exactly one line, without looking for its ink box (Tesseract's
    /// `--psm 13`, "raw line").
    pub fn recognize_raw_line(&self, image: &GreyImage) -> Result<LineResult> {
        self.recognize_cut(image, (0, 0, image.width, image.height))
    }

    /// The softmax `[frames, codes]` Tesseract's `--psm 13` would decode for `image` (taken
    /// whole as the line), after its inversion check: for comparing with a dump of Tesseract's
    /// outputs.
    pub fn raw_line_probabilities(&self, image: &GreyImage) -> Result<Tensor> {
        let (scaled, _) = self.scale_line(image)?;
        self.best_reading(&scaled)
    }

    /// The unichar text of output code `code` (empty for the blank).
    pub fn code_text(&self, code: u32) -> &str {
        if code == self.null_char {
            return "";
        }
        self.charset
            .lookup(&[code])
            .and_then(|u| self.charset.unichars.get(u))
            .map_or("", String::as_str)
    }

    /// Reads a simple page: one column of horizontal lines on a plain background, split by
    /// [`super::page::line_bands`]. Multi-column layouts, tables and skewed scans are not
    /// handled (their lines run together or split apart).
    pub fn recognize_page(&self, image: &GreyImage) -> Result<PageResult> {
        let mut lines = Vec::new();
        for (y0, y1) in super::page::line_bands(image) {
            let band = image.crop(0, y0, image.width, y1)?;
            let Some(b) = band.line_box() else { continue };
            // The band's own box, padded into the page (not just into the band).
            let (bx0, bx1) = (b.0, b.2);
            let (py0, py1) = (y0.saturating_sub(4), (y1 + 4).min(image.height));
            let line = image.crop(bx0, py0, bx1, py1)?;
            let result = self.recognize_cut(&line, (bx0, py0, bx1, py1))?;
            if !result.text.is_empty() {
                lines.push(result);
            }
        }
        let text = lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Ok(PageResult { text, lines })
    }

    /// Reads an image that is already one line, with the box it was cut from.
    fn recognize_cut(
        &self,
        line: &GreyImage,
        bbox: (usize, usize, usize, usize),
    ) -> Result<LineResult> {
        let (scaled, factor) = self.scale_line(line)?;
        let probs = self.best_reading(&scaled)?;
        Ok(self.decode_frames(&probs.to_vec_f32()?, self.x_scale as f32 / factor, bbox))
    }

    /// Decodes `[frames, codes]` output probabilities (row-major) into a line, each frame
    /// `px_per_frame` pixels wide from `bbox.0`: the search and word assembly alone, for
    /// outputs from elsewhere (another run of the network, a dump of Tesseract's).
    pub fn decode_frames(
        &self,
        probs: &[f32],
        px_per_frame: f32,
        bbox: (usize, usize, usize, usize),
    ) -> LineResult {
        let chars = decode(
            probs,
            self.charset.code_range,
            &self.charset,
            self.null_char,
        );
        self.assemble(&chars, px_per_frame, bbox)
    }

    /// `line` scaled to the network's height, and the factor; a line that would become
    /// larger than [`MAX_SCALED_PIXELS`] (a sliver thousands of times wider than high) is
    /// refused before anything is allocated.
    fn scale_line(&self, line: &GreyImage) -> Result<(GreyImage, f32)> {
        let factor = self.input_height as f32 / line.height as f32;
        let width = line.width as f64 * factor as f64;
        if width * self.input_height as f64 > MAX_SCALED_PIXELS as f64 {
            return Err(Error::InvalidImage {
                reason: format!(
                    "a {}x{} line would scale to {width:.0}x{} pixels, more than the {MAX_SCALED_PIXELS} a line may have",
                    line.width, line.height, self.input_height
                ),
            });
        }
        Ok((super::scale::pix_scale(line, factor)?, factor))
    }

    /// The outputs for a scaled line, or for it inverted when that reads with more confidence
    /// (only tried below [`INVERT_THRESHOLD`]).
    fn best_reading(&self, scaled: &GreyImage) -> Result<Tensor> {
        let probs = self.probabilities(scaled)?;
        let mean = self.mean_best(&probs)?;
        if mean >= INVERT_THRESHOLD {
            return Ok(probs);
        }
        let inverted = GreyImage {
            data: scaled.data.iter().map(|&p| 255 - p).collect(),
            ..scaled.clone()
        };
        let inv = self.probabilities(&inverted)?;
        Ok(if self.mean_best(&inv)? > mean {
            inv
        } else {
            probs
        })
    }

    /// Tesseract's `OutputStats` mean: the mean best non-blank probability of `[frames,
    /// codes]` outputs, in 1/127 steps (0 when every frame's best is the blank).
    fn mean_best(&self, probs: &Tensor) -> Result<f32> {
        let codes = probs.dims()[1].max(1);
        let (mut sum, mut n) = (0i64, 0i64);
        for frame in probs.to_vec_f32()?.chunks_exact(codes) {
            let mut best = 0;
            for (i, &v) in frame.iter().enumerate() {
                if v > frame[best] {
                    best = i;
                }
            }
            if best as u32 != self.null_char {
                sum += (127.0 * frame[best]) as i64;
                n += 1;
            }
        }
        Ok(if n == 0 {
            0.0
        } else {
            (sum as f64 / n as f64 / 127.0) as f32
        })
    }

    /// The network's `[frames, codes]` softmax for a line scaled to the input height.
    pub fn probabilities(&self, scaled: &GreyImage) -> Result<Tensor> {
        let input = normalise(scaled)?;
        let mut rand = TessRand::for_line(self.sample_iteration);
        let out = forward(&self.network, input, &mut rand)?;
        match *out.dims() {
            [1, frames, codes] => out.reshape([frames, codes]),
            _ => Err(Error::shape("ocr", "[1, frames, codes]", out.shape())),
        }
    }

    /// Words (split at spaces, as Tesseract's `ExtractBestPathAsWords`), their confidences
    /// and the characters' pixel extents.
    fn assemble(
        &self,
        decoded: &[DecodedChar],
        px_per_frame: f32,
        bbox: (usize, usize, usize, usize),
    ) -> LineResult {
        let text_of = |c: &DecodedChar| {
            self.charset
                .unichars
                .get(c.unichar)
                .cloned()
                .unwrap_or_default()
        };
        let is_space = |i: usize| decoded[i].unichar == 0;
        let (mut words, mut word_certs) = (Vec::new(), Vec::new());
        let mut chars = Vec::new();
        let (mut start, mut prev_space_cert) = (0, 0.0f32);
        while start < decoded.len() {
            let mut end = start + 1;
            while end < decoded.len() && !is_space(end) {
                end += 1;
            }
            let space_cert = if end < decoded.len() {
                decoded[end].certainty
            } else {
                0.0
            };
            let word: String = decoded[start..end].iter().map(text_of).collect();
            let min_char = decoded[start..end]
                .iter()
                .map(|c| c.certainty)
                .fold(0.0f32, f32::min);
            word_certs.push(CERTAINTY_SCALE * min_char.min(space_cert.min(prev_space_cert)));
            words.push(word);
            for c in &decoded[start..end] {
                chars.push(CharResult {
                    text: text_of(c),
                    confidence: (100.0 + 5.0 * c.certainty).clamp(0.0, 100.0),
                    x0: bbox.0 + (c.frames.0 as f32 * px_per_frame).floor() as usize,
                    x1: bbox.0 + (c.frames.1 as f32 * px_per_frame).ceil() as usize,
                });
            }
            prev_space_cert = space_cert;
            start = if end < decoded.len() { end + 1 } else { end };
        }
        let mean = word_certs.iter().sum::<f32>() / word_certs.len().max(1) as f32;
        let confidence = if words.is_empty() {
            0.0
        } else {
            (100.0 + 5.0 * mean).clamp(0.0, 100.0)
        };
        LineResult {
            text: words.join(" "),
            confidence,
            chars,
            bbox,
        }
    }
}

/// The network must start with an input layer of one channel and a fixed, plausible height.
fn check_input(network: &Layer) -> Result<usize> {
    let Kind::Series(children) = &network.kind else {
        return Err(invalid(0, "the network is not a series of layers"));
    };
    match children.first().map(|c| &c.kind) {
        Some(Kind::Input {
            shape: [_, h, _, 1],
        }) if (1..=MAX_INPUT_HEIGHT).contains(h) => Ok(*h),
        Some(Kind::Input { shape }) => Err(invalid(
            0,
            format!("input shape {shape:?}: only grey inputs of a fixed height up to {MAX_INPUT_HEIGHT} are supported"),
        )),
        _ => Err(invalid(0, "the network does not start with an input layer")),
    }
}

/// Image columns per output frame: the product of the pooling widths.
fn x_scale(network: &Layer) -> usize {
    let mut scale = 1usize;
    network.walk(&mut |l| {
        if let Kind::Maxpool { x_scale, .. } = l.kind {
            scale = scale.saturating_mul(x_scale);
        }
    });
    scale
}
