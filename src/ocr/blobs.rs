//! Connected ink components and a rough row model (baseline, x-height, whether any letter
//! reaches below or above the x-height band), enough to cut a line the way Tesseract's
//! single-line mode does without its whole layout analysis.

/// A component's box `(x0, y0, x1, y1)`, exclusive ends.
pub type Bbox = (usize, usize, usize, usize);

/// Boxes of the 8-connected components of `ink` (`width × height`, row-major).
pub fn boxes(ink: &[bool], width: usize, height: usize) -> Vec<Bbox> {
    let mut seen = vec![false; ink.len()];
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for start in 0..ink.len() {
        if !ink[start] || seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push(start);
        let mut b = (usize::MAX, usize::MAX, 0, 0);
        while let Some(i) = stack.pop() {
            let (x, y) = (i % width, i / width);
            b = (b.0.min(x), b.1.min(y), b.2.max(x + 1), b.3.max(y + 1));
            for ny in y.saturating_sub(1)..(y + 2).min(height) {
                for nx in x.saturating_sub(1)..(x + 2).min(width) {
                    let j = ny * width + nx;
                    if ink[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        out.push(b);
    }
    out
}

/// What the cut needs of a text row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowModel {
    /// Image row just below the letters' feet.
    pub baseline: f32,
    pub x_height: f32,
    pub has_descenders: bool,
    pub has_ascenders: bool,
}

/// Baseline = the median component bottom; x-height = the lower-third height of components
/// standing on it; descenders / ascenders = components reaching a third of the x-height
/// below it / above the x-height band.
pub fn row_model(blobs: &[Bbox]) -> Option<RowModel> {
    let tall: Vec<&Bbox> = blobs.iter().filter(|b| b.3 - b.1 >= 3).collect();
    if tall.len() < 2 {
        return None;
    }
    let mut bottoms: Vec<usize> = tall.iter().map(|b| b.3).collect();
    bottoms.sort_unstable();
    let baseline = bottoms[bottoms.len() / 2] as f32;
    let span = (tall.iter().map(|b| b.3).max()? - tall.iter().map(|b| b.1).min()?) as f32;
    let mut heights: Vec<f32> = tall
        .iter()
        .filter(|b| (b.3 as f32 - baseline).abs() <= 0.1 * span + 1.0)
        .map(|b| baseline - b.1 as f32)
        .collect();
    if heights.is_empty() {
        return None;
    }
    heights.sort_by(f32::total_cmp);
    let x_height = heights[heights.len() / 3].max(1.0);
    let has_descenders = blobs.iter().any(|b| b.3 as f32 > baseline + x_height / 3.0);
    let has_ascenders = blobs
        .iter()
        .any(|b| (b.1 as f32) < baseline - 1.25 * x_height);
    Some(RowModel {
        baseline,
        x_height,
        has_descenders,
        has_ascenders,
    })
}
