//! Tesseract's seeded generator (`TRand`, a `std::minstd_rand`): the 3×3 convolution fills
//! positions outside the image from it, so the same draws in the same order are part of
//! reproducing Tesseract's outputs at a line's edges.

const MODULUS: u64 = 2_147_483_647; // 2^31 - 1
const MULTIPLIER: u64 = 48_271;

#[derive(Debug, Clone)]
pub struct TessRand {
    state: u64,
}

impl TessRand {
    /// The recognizer's seed (`LSTMRecognizer::SetRandomSeed`): `sample_iteration · 0x10000001`,
    /// with the first draw thrown away.
    pub fn for_line(sample_iteration: i32) -> TessRand {
        let seed = (sample_iteration as i64).wrapping_mul(0x1000_0001) as u64;
        let mut r = TessRand {
            state: seed % MODULUS,
        };
        if r.state == 0 {
            r.state = 1;
        }
        r.next_int();
        r
    }

    /// The next value in `1..2^31 - 1`.
    pub fn next_int(&mut self) -> i32 {
        self.state = self.state * MULTIPLIER % MODULUS;
        self.state as i32
    }

    /// Uniform in `[-range, range)`, evaluated in f64 left to right as Tesseract's
    /// `SignedRand`.
    pub fn signed(&mut self, range: f64) -> f64 {
        range * 2.0 * self.next_int() as f64 / i32::MAX as f64 - range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Draws for eng.traineddata's `sample_iteration` (6352704), printed by a C++ program
    /// around libstdc++'s `std::minstd_rand` seeded as Tesseract seeds it.
    #[test]
    fn matches_minstd_rand_as_tesseract_seeds_it() {
        let mut r = TessRand::for_line(6_352_704);
        let draws: Vec<i32> = (0..5).map(|_| r.next_int()).collect();
        assert_eq!(
            draws,
            [488078125, 2123564285, 734678984, 144290106, 738239505]
        );
        let mut r = TessRand::for_line(6_352_704);
        assert!((r.signed(127.0) - -69.271112).abs() < 1e-6);
    }
}
