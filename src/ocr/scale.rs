//! Leptonica's `pixScale` for 8-bit grey, which Tesseract uses to bring a line to the
//! network's height: area mapping below 0.7, linear interpolation above, each followed by an
//! unsharp mask in the middle ranges. Integer formulas and float/double mixes as Leptonica 1.82
//! has them, since the network sees their exact output.

use super::image::GreyImage;
use crate::error::{Error, Result};
use crate::storage::try_vec;

/// Scales by `factor` in both directions.
pub fn pix_scale(src: &GreyImage, factor: f32) -> Result<GreyImage> {
    if !(factor > 0.0 && factor.is_finite()) {
        return Err(Error::InvalidImage {
            reason: format!("scale factor {factor}"),
        });
    }
    if factor == 1.0 {
        return Ok(src.clone());
    }
    let (sharp_fract, sharp_width) = if factor < 0.7 { (0.2, 1) } else { (0.4, 2) };
    if factor < 0.7 {
        let out = area_map(src, factor)?;
        if factor <= 0.2 {
            return Ok(out);
        }
        unsharp(&out, sharp_width, sharp_fract)
    } else {
        let out = linear(src, factor)?;
        if factor >= 1.4 {
            return Ok(out);
        }
        unsharp(&out, sharp_width, sharp_fract)
    }
}

/// Leptonica's output size: `(int)(f · (float)n + 0.5)`.
fn scaled_size(n: usize, f: f32) -> usize {
    ((f * n as f32) as f64 + 0.5) as usize
}

fn blank(w: usize, h: usize) -> Result<GreyImage> {
    let n = w
        .checked_mul(h)
        .ok_or_else(|| Error::overflow("scaled image", &[w, h]))?;
    if n == 0 {
        return Err(Error::InvalidImage {
            reason: format!("scales to {w}x{h}"),
        });
    }
    Ok(GreyImage {
        width: w,
        height: h,
        data: try_vec(n, 0u8)?,
    })
}

/// `pixScaleGrayLI`: bilinear with 4-bit fractions (exact ×2 and ×4 have their own routine).
fn linear(src: &GreyImage, f: f32) -> Result<GreyImage> {
    if f == 2.0 || f == 4.0 {
        return upscale_exact(src, f as usize);
    }
    let (ws, hs) = (src.width, src.height);
    let (wd, hd) = (scaled_size(ws, f), scaled_size(hs, f));
    let mut out = blank(wd, hd)?;
    let scx = (16.0 * ws as f64 / wd as f64) as f32;
    let scy = (16.0 * hs as f64 / hd as f64) as f32;
    let (wm2, hm2) = (ws as i64 - 2, hs as i64 - 2);
    for i in 0..hd {
        let ypm = (scy * i as f32) as i64;
        let (yp, yf) = (ypm >> 4, (ypm & 15) as u32);
        for j in 0..wd {
            let xpm = (scx * j as f32) as i64;
            let (xp, xf) = (xpm >> 4, (xpm & 15) as u32);
            let at = |x: i64, y: i64| src.at(x as usize, y as usize) as u32;
            let v00 = at(xp, yp);
            let (v01, v10, v11) = match (xp > wm2, yp > hm2) {
                (false, true) => (at(xp + 1, yp), v00, at(xp + 1, yp)),
                (true, false) => (v00, at(xp, yp + 1), at(xp, yp + 1)),
                (true, true) => (v00, v00, v00),
                (false, false) => (at(xp + 1, yp), at(xp, yp + 1), at(xp + 1, yp + 1)),
            };
            let v = (16 - xf) * (16 - yf) * v00
                + xf * (16 - yf) * v01
                + (16 - xf) * yf * v10
                + xf * yf * v11
                + 128;
            out.data[i * wd + j] = (v / 256) as u8;
        }
    }
    Ok(out)
}

/// `pixScaleGray2xLI` / `4xLI`: each source pixel becomes a k×k block interpolated towards its
/// right and lower neighbours (edges replicated), truncating.
fn upscale_exact(src: &GreyImage, k: usize) -> Result<GreyImage> {
    let (ws, hs) = (src.width, src.height);
    let mut out = blank(ws * k, hs * k)?;
    for i in 0..hs {
        for j in 0..ws {
            let (j1, i1) = ((j + 1).min(ws - 1), (i + 1).min(hs - 1));
            let (v00, v01, v10, v11) = (
                src.at(j, i) as usize,
                src.at(j1, i) as usize,
                src.at(j, i1) as usize,
                src.at(j1, i1) as usize,
            );
            for dy in 0..k {
                for dx in 0..k {
                    let v = (k - dx) * (k - dy) * v00
                        + dx * (k - dy) * v01
                        + (k - dx) * dy * v10
                        + dx * dy * v11;
                    out.data[(k * i + dy) * ws * k + k * j + dx] = (v / (k * k)) as u8;
                }
            }
        }
    }
    Ok(out)
}

/// `pixScaleAreaMap`: each output pixel is the area-weighted mean of the source pixels it
/// covers, in 1/16-pixel units (halving factors average 2×2 blocks instead).
fn area_map(src: &GreyImage, f: f32) -> Result<GreyImage> {
    if let Some(times) = [0.5f32, 0.25, 0.125, 0.0625].iter().position(|&h| h == f) {
        let mut img = halve(src)?;
        for _ in 0..times {
            img = halve(&img)?;
        }
        return Ok(img);
    }
    let (ws, hs) = (src.width, src.height);
    let (wd, hd) = (scaled_size(ws, f), scaled_size(hs, f));
    let mut out = blank(wd, hd)?;
    let scx = (16.0 * ws as f64 / wd as f64) as f32;
    let scy = (16.0 * hs as f64 / hd as f64) as f32;
    // The lower edge is a double product in Leptonica, the upper a float one.
    let span = |sc: f32, i: usize| {
        (
            (sc * i as f32) as i64,
            (sc as f64 * (i as f64 + 1.0)) as i64,
        )
    };
    for i in 0..hd {
        let (yu, yl) = span(scy, i);
        let (yup, yuf, ylp, ylf) = (yu >> 4, yu & 15, yl >> 4, yl & 15);
        let dely = ylp - yup;
        for j in 0..wd {
            let (xu, xl) = span(scx, j);
            let (xup, xuf, xlp, xlf) = (xu >> 4, xu & 15, xl >> 4, xl & 15);
            let delx = xlp - xup;
            let s = |x: i64, y: i64| src.at(x as usize, y as usize) as i64;
            if xlp > ws as i64 - 2 || ylp > hs as i64 - 2 {
                out.data[i * wd + j] = s(xup, yup) as u8;
                continue;
            }
            let area = ((16 - xuf) + 16 * (delx - 1) + xlf) * ((16 - yuf) + 16 * (dely - 1) + ylf);
            let mut sum = (16 - xuf) * (16 - yuf) * s(xup, yup)
                + xlf * (16 - yuf) * s(xlp, yup)
                + (16 - xuf) * ylf * s(xup, yup + dely)
                + xlf * ylf * s(xlp, yup + dely);
            for k in 1..dely {
                for m in 1..delx {
                    sum += 256 * s(xup + m, yup + k);
                }
                sum += (16 - xuf) * 16 * s(xup, yup + k) + xlf * 16 * s(xlp, yup + k);
            }
            for m in 1..delx {
                sum += 16 * (16 - yuf) * s(xup + m, yup) + 16 * ylf * s(xup + m, yup + dely);
            }
            out.data[i * wd + j] = ((sum + 128) / area.max(1)) as u8;
        }
    }
    Ok(out)
}

/// `pixScaleAreaMap2`: 2×2 means, truncated.
fn halve(src: &GreyImage) -> Result<GreyImage> {
    let (wd, hd) = (src.width / 2, src.height / 2);
    let mut out = blank(wd, hd)?;
    for i in 0..hd {
        for j in 0..wd {
            let s = |x: usize, y: usize| src.at(x, y) as u32;
            let v = s(2 * j, 2 * i)
                + s(2 * j + 1, 2 * i)
                + s(2 * j, 2 * i + 1)
                + s(2 * j + 1, 2 * i + 1);
            out.data[i * wd + j] = (v / 4) as u8;
        }
    }
    Ok(out)
}

/// `pixUnsharpMaskingGray2D`: `s + fract · (s - box_mean)` inside a border of `hw` pixels,
/// which keeps the source values.
fn unsharp(src: &GreyImage, hw: usize, fract: f32) -> Result<GreyImage> {
    let (w, h) = (src.width, src.height);
    let mut out = src.clone();
    if w <= 2 * hw || h <= 2 * hw {
        return Ok(out);
    }
    let norm = (1.0 / ((2 * hw + 1) * (2 * hw + 1)) as f64) as f32;
    let mut horiz = try_vec(w * h, 0.0f32)?;
    for i in 0..h {
        for j in hw..w - hw {
            let s: u32 = (j - hw..=j + hw).map(|x| src.at(x, i) as u32).sum();
            horiz[i * w + j] = norm * s as f32;
        }
    }
    for i in hw..h - hw {
        for j in hw..w - hw {
            let mut val = 0.0f32;
            for y in i - hw..=i + hw {
                val += horiz[y * w + j];
            }
            let s = src.at(j, i) as f32;
            let a = s + fract * (s - val);
            out.data[i * w + j] = ((a + 0.5) as i32).clamp(0, 255) as u8;
        }
    }
    Ok(out)
}
