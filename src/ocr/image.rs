//! From a picture of a text line to the network's input, as Tesseract prepares it: grey
//! levels, the text's bounding box (Otsu-thresholded ink, padded by 4 pixels), Leptonica's
//! `pixScale` to the network's height, and black/white levels from the middle row mapping
//! pixels into [-1, 1] (stored as int8 for the integer models).

use crate::error::{Error, Result};
use crate::storage::try_vec;
use crate::Tensor;

/// Tesseract pads a line's box by this much before cutting it out (`kImagePadding`).
const PADDING: usize = 4;

/// An 8-bit grey image, row-major, 0 = black. The fields are private to the crate so that
/// `data.len() == width · height > 0` always holds (constructors check it).
#[derive(Debug, Clone, PartialEq)]
pub struct GreyImage {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) data: Vec<u8>,
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidImage {
        reason: reason.into(),
    }
}

impl GreyImage {
    pub fn new(width: usize, height: usize, data: Vec<u8>) -> Result<GreyImage> {
        let n = width
            .checked_mul(height)
            .ok_or_else(|| Error::overflow("image", &[width, height]))?;
        if n == 0 || data.len() != n {
            return Err(invalid(format!(
                "{width}x{height} needs {n} grey bytes, got {}",
                data.len()
            )));
        }
        Ok(GreyImage {
            width,
            height,
            data,
        })
    }

    /// From `ImageData`-style RGBA: alpha blended over white, then Leptonica's luminance
    /// (0.3 R + 0.5 G + 0.2 B, rounded).
    pub fn from_rgba(width: usize, height: usize, rgba: &[u8]) -> Result<GreyImage> {
        let n = width
            .checked_mul(height)
            .ok_or_else(|| Error::overflow("image", &[width, height]))?;
        if n == 0 || n.checked_mul(4) != Some(rgba.len()) {
            return Err(invalid(format!(
                "{width}x{height} RGBA needs {} bytes, got {}",
                n.saturating_mul(4),
                rgba.len()
            )));
        }
        let mut data = try_vec(n, 0u8)?;
        for (d, p) in data.iter_mut().zip(rgba.chunks_exact(4)) {
            let a = p[3] as f32 / 255.0;
            let over_white = |c: u8| c as f32 * a + 255.0 * (1.0 - a);
            let (r, g, b) = (over_white(p[0]), over_white(p[1]), over_white(p[2]));
            *d = (0.3 * r + 0.5 * g + 0.2 * b + 0.5).min(255.0) as u8;
        }
        Ok(GreyImage {
            width,
            height,
            data,
        })
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// The pixels, row-major.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    pub(crate) fn at(&self, x: usize, y: usize) -> u8 {
        self.data[y * self.width + x]
    }

    /// The sub-image `[x0, x1) × [y0, y1)`, which must be a non-empty part of this one.
    pub fn crop(&self, x0: usize, y0: usize, x1: usize, y1: usize) -> Result<GreyImage> {
        if !(x0 < x1 && x1 <= self.width && y0 < y1 && y1 <= self.height) {
            return Err(invalid(format!(
                "crop [{x0}, {x1}) x [{y0}, {y1}) is not a non-empty part of a {}x{} image",
                self.width, self.height
            )));
        }
        let (w, h) = (x1 - x0, y1 - y0);
        let mut data = try_vec(w * h, 0u8)?;
        for y in 0..h {
            data[y * w..(y + 1) * w].copy_from_slice(&self.data[(y0 + y) * self.width + x0..][..w]);
        }
        Ok(GreyImage {
            width: w,
            height: h,
            data,
        })
    }

    /// Whether each pixel is ink, by Tesseract's Otsu threshold (`OtsuThreshold` on one
    /// channel): the darker class is ink unless it covers most of the image (light text on a
    /// dark ground).
    pub fn ink_mask(&self) -> Vec<bool> {
        let mut hist = [0u64; 256];
        for &p in &self.data {
            hist[p as usize] += 1;
        }
        let total = self.data.len() as f64;
        let (mut best_t, mut best_omega0, mut best_sig) = (-1i32, 0.0f64, -1.0f64);
        let mu_total: f64 = hist
            .iter()
            .enumerate()
            .map(|(i, &h)| i as f64 * h as f64)
            .sum();
        let (mut omega0, mut mu_t) = (0.0f64, 0.0f64);
        for (t, &count) in hist.iter().enumerate().take(255) {
            omega0 += count as f64;
            mu_t += t as f64 * count as f64;
            if omega0 == 0.0 {
                continue;
            }
            let omega1 = total - omega0;
            if omega1 == 0.0 {
                break;
            }
            let (mu0, mu1) = (mu_t / omega0, (mu_total - mu_t) / omega1);
            let sig = (mu1 - mu0) * (mu1 - mu0) * omega0 * omega1;
            if sig > best_sig {
                (best_sig, best_t, best_omega0) = (sig, t as i32, omega0);
            }
        }
        if best_t < 0 || best_omega0 == 0.0 || best_omega0 == total {
            return vec![false; self.data.len()];
        }
        let dark_is_ink = if best_omega0 > 0.75 * total {
            false
        } else if best_omega0 < 0.25 * total {
            true
        } else {
            best_omega0 < total / 2.0
        };
        self.data
            .iter()
            .map(|&p| ((p as i32) <= best_t) == dark_is_ink)
            .collect()
    }

    /// The box Tesseract cuts a single line from, as `(x0, y0, x1, y1)`: the ink's bounding
    /// box grown to the row's typical descender and ascender reach when the line has none of
    /// its own (Tesseract's single-line mode grows it to its row model's `baseline +
    /// descenders` and `baseline + x-height + ascenders`; without real descenders or
    /// ascenders those default to half the x-height), padded by 4 pixels and clipped to the
    /// image. `None` for an image without ink.
    pub fn line_box(&self) -> Option<(usize, usize, usize, usize)> {
        let ink = self.ink_mask();
        let blobs = super::blobs::boxes(&ink, self.width, self.height);
        let (mut x0, mut y0, mut x1, mut y1) = (usize::MAX, usize::MAX, 0, 0);
        for b in &blobs {
            (x0, y0, x1, y1) = (x0.min(b.0), y0.min(b.1), x1.max(b.2), y1.max(b.3));
        }
        if blobs.is_empty() {
            return None;
        }
        let (mut top, mut bottom) = (y0 as f32, y1 as f32);
        if let Some(row) = super::blobs::row_model(&blobs) {
            if !row.has_descenders {
                bottom = bottom.max(row.baseline + 0.5 * row.x_height);
            }
            if !row.has_ascenders {
                top = top.min(row.baseline - 1.5 * row.x_height);
            }
        }
        let top = (top.max(0.0).ceil() as usize).min(y0);
        let bottom = (bottom.ceil() as usize).max(y1);
        Some((
            x0.saturating_sub(PADDING),
            top.saturating_sub(PADDING),
            (x1 + PADDING).min(self.width),
            (bottom + PADDING).min(self.height),
        ))
    }
}

/// The network's input for a line already scaled to its height: `[height, width, 1]` int8,
/// `(p - black) / contrast - 1` stored as `round(128 v)` clipped to ±127 (Tesseract's
/// `SetPixel`).
pub fn normalise(scaled: &GreyImage) -> Result<Tensor> {
    if scaled.width < 3 || scaled.height < 3 {
        return Err(invalid(format!(
            "a line scaled to {}x{} is too small to read",
            scaled.width, scaled.height
        )));
    }
    let (black, white) = black_white(scaled);
    let mut contrast = (white - black) / 2.0;
    if contrast <= 0.0 {
        contrast = 1.0;
    }
    let mut q = try_vec(scaled.data.len(), 0i8)?;
    for (d, &p) in q.iter_mut().zip(&scaled.data) {
        let x = 128.0 * ((p as f32 - black) / contrast - 1.0);
        let r = if x >= 0.0 {
            (x + 0.5) as i32
        } else {
            -((-x + 0.5) as i32)
        };
        *d = r.clamp(-127, 127) as i8;
    }
    Tensor::from_i8(q, [scaled.height, scaled.width, 1])
}

/// Tesseract's `ComputeBlackWhite`: the 25th percentile of the middle row's local minima and
/// the 75th of its local maxima.
fn black_white(img: &GreyImage) -> (f32, f32) {
    let (mut mins, mut maxes) = ([0u32; 256], [0u32; 256]);
    if img.width >= 3 {
        let y = img.height / 2;
        let row = &img.data[y * img.width..(y + 1) * img.width];
        for x in 1..img.width - 1 {
            let (prev, curr, next) = (row[x - 1], row[x], row[x + 1]);
            if (curr < prev && curr <= next) || (curr <= prev && curr < next) {
                mins[curr as usize] += 1;
            }
            if (curr > prev && curr >= next) || (curr >= prev && curr > next) {
                maxes[curr as usize] += 1;
            }
        }
    }
    if mins.iter().all(|&c| c == 0) {
        mins[0] = 1;
    }
    if maxes.iter().all(|&c| c == 0) {
        maxes[255] = 1;
    }
    (
        percentile(&mins, 0.25) as f32,
        percentile(&maxes, 0.75) as f32,
    )
}

/// `STATS::ile`: the interpolated upper edge of the bucket where the running count reaches
/// `frac` of the total.
fn percentile(buckets: &[u32; 256], frac: f64) -> f64 {
    let total: i64 = buckets.iter().map(|&b| b as i64).sum();
    let target = (frac * total as f64).clamp(1.0, total as f64);
    let (mut sum, mut index) = (0i64, 0usize);
    while index < 256 && (sum as f64) < target {
        sum += buckets[index] as i64;
        index += 1;
    }
    if index == 0 {
        return 0.0;
    }
    index as f64 - (sum as f64 - target) / buckets[index - 1] as f64
}

impl GreyImage {
    /// Decodes a PNG (any colour type and depth) to grey, as Tesseract's input handling does:
    /// colour through luminance, alpha over white.
    pub fn from_png(bytes: &[u8]) -> Result<GreyImage> {
        let bad = |e: png::DecodingError| invalid(format!("PNG: {e}"));
        let mut decoder = png::Decoder::new(bytes);
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().map_err(bad)?;
        let mut buf = try_vec(reader.output_buffer_size(), 0u8)?;
        let info = reader.next_frame(&mut buf).map_err(bad)?;
        let (w, h) = (info.width as usize, info.height as usize);
        let px = &buf[..info.buffer_size()];
        let rgba: Vec<u8> = match info.color_type {
            png::ColorType::Grayscale => return GreyImage::new(w, h, px.to_vec()),
            png::ColorType::GrayscaleAlpha => px
                .chunks_exact(2)
                .flat_map(|p| [p[0], p[0], p[0], p[1]])
                .collect(),
            png::ColorType::Rgb => px
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            png::ColorType::Rgba => px.to_vec(),
            png::ColorType::Indexed => return Err(invalid("PNG: palette left unexpanded")),
        };
        GreyImage::from_rgba(w, h, &rgba)
    }
}
