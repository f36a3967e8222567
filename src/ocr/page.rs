//! Splitting a simple page into lines by its horizontal projection profile: bands of rows
//! that hold ink, with bands much thinner than the typical line (an i's dot, an accent)
//! joined to their nearest neighbour. For one column of horizontal text on a plain
//! background; columns, tables, photos and skewed scans need real layout analysis.

use super::image::GreyImage;

/// Row ranges `[y0, y1)` of the text lines, top to bottom.
pub fn line_bands(image: &GreyImage) -> Vec<(usize, usize)> {
    let ink = image.ink_mask();
    let rows: Vec<bool> = ink
        .chunks_exact(image.width)
        .map(|r| r.iter().any(|&b| b))
        .collect();
    let mut bands: Vec<(usize, usize)> = Vec::new();
    let mut y = 0;
    while y < rows.len() {
        if rows[y] {
            let start = y;
            while y < rows.len() && rows[y] {
                y += 1;
            }
            bands.push((start, y));
        } else {
            y += 1;
        }
    }
    let mut heights: Vec<usize> = bands.iter().map(|b| b.1 - b.0).collect();
    heights.sort_unstable();
    let typical = heights.get(heights.len() / 2).copied().unwrap_or(0);
    // Join thin bands to the closer neighbour until none is left.
    while let Some(i) = bands.iter().position(|b| (b.1 - b.0) * 5 < typical * 2) {
        if bands.len() == 1 {
            break;
        }
        let gap_up = if i > 0 {
            bands[i].0 - bands[i - 1].1
        } else {
            usize::MAX
        };
        let gap_down = if i + 1 < bands.len() {
            bands[i + 1].0 - bands[i].1
        } else {
            usize::MAX
        };
        let j = if gap_up <= gap_down { i - 1 } else { i + 1 };
        let (a, b) = (i.min(j), i.max(j));
        bands[a] = (bands[a].0, bands[b].1);
        bands.remove(b);
    }
    bands
}
