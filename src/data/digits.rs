//! The seeded toy digit dataset: 8×8 grayscale images of the digits 0–9.
//!
//! Every image is rendered from a per-digit stroke template (polylines and arcs in a unit box),
//! placed on the 8×8 canvas with a random size, shift (up to ±1 pixel), slant and stroke width,
//! drawn with anti-aliasing (coverage from the distance between a pixel's centre and the nearest
//! stroke segment), dimmed by a random intensity and overlaid with per-pixel noise.
//!
//! The task is learnable but not trivial: the shifts and slants move the strokes around enough that
//! a linear classifier stays well below a small MLP. All randomness comes from the caller's
//! [`rand::Rng`], so the same seed gives bit-identical data.

use std::collections::HashSet;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The side of a (square) image, in pixels.
pub const IMAGE_SIDE: usize = 8;
/// The number of pixels (features) in one image: `IMAGE_SIDE * IMAGE_SIDE`.
pub const FEATURES: usize = IMAGE_SIDE * IMAGE_SIDE;
/// The number of classes: the digits 0–9.
pub const CLASSES: usize = 10;

/// A set of labelled 8×8 images.
///
/// `images[i]` is a row-major image (row 0 is the top) with pixel values in `[0, 1]` and
/// `labels[i]` its class in `0..CLASSES`. The two vectors have the same length.
///
/// ```
/// use teenygrad::data::{Dataset, FEATURES};
///
/// let data = Dataset { images: vec![[0.0; FEATURES], [1.0; FEATURES]], labels: vec![3, 7] };
/// assert_eq!(data.len(), 2);
/// assert_eq!(data.flat_images().len(), 2 * FEATURES);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    /// The images, each row-major, values in `[0, 1]`.
    pub images: Vec<[f32; FEATURES]>,
    /// The class of each image, in `0..CLASSES`.
    pub labels: Vec<u8>,
}

impl Dataset {
    /// The number of samples.
    ///
    /// ```
    /// let data = teenygrad::data::Dataset::default();
    /// assert_eq!(data.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the dataset holds no samples.
    ///
    /// ```
    /// assert!(teenygrad::data::Dataset::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// How many samples each class has.
    ///
    /// # Panics
    ///
    /// If a label is not below [`CLASSES`], naming the sample and its label.
    ///
    /// ```
    /// use teenygrad::data::{Dataset, FEATURES};
    ///
    /// let data = Dataset { images: vec![[0.0; FEATURES]; 3], labels: vec![1, 1, 4] };
    /// assert_eq!(data.class_counts(), [0, 2, 0, 0, 1, 0, 0, 0, 0, 0]);
    /// ```
    #[track_caller]
    pub fn class_counts(&self) -> [usize; CLASSES] {
        let mut counts = [0; CLASSES];
        for (i, &label) in self.labels.iter().enumerate() {
            let Some(count) = counts.get_mut(usize::from(label)) else {
                panic!(
                    "Dataset: sample {i} has label {label}, but labels are 0..={}",
                    CLASSES - 1
                );
            };
            *count += 1;
        }
        counts
    }

    /// The most frequent class: the prediction of the majority-class baseline.
    ///
    /// Ties go to the smallest class; an empty dataset gives 0.
    ///
    /// # Panics
    ///
    /// As [`class_counts`](Self::class_counts): if a label is not below [`CLASSES`].
    ///
    /// ```
    /// use teenygrad::data::{Dataset, FEATURES};
    ///
    /// let data = Dataset { images: vec![[0.0; FEATURES]; 4], labels: vec![2, 5, 5, 2] };
    /// assert_eq!(data.majority_class(), 2);
    /// ```
    #[track_caller]
    pub fn majority_class(&self) -> u8 {
        let counts = self.class_counts();
        let mut best = 0;
        for class in 1..CLASSES {
            if counts[class] > counts[best] {
                best = class;
            }
        }
        best as u8
    }

    /// The images as one row-major `Vec` of `len() * FEATURES` values, for building a
    /// `[len, 64]` tensor.
    ///
    /// ```
    /// use teenygrad::data::{Dataset, FEATURES};
    ///
    /// let mut second = [0.0; FEATURES];
    /// second[0] = 0.5;
    /// let data = Dataset { images: vec![[0.0; FEATURES], second], labels: vec![0, 1] };
    /// let flat = data.flat_images();
    /// assert_eq!(flat.len(), 128);
    /// assert_eq!(flat[FEATURES], 0.5);
    /// ```
    pub fn flat_images(&self) -> Vec<f32> {
        self.images.iter().flatten().copied().collect()
    }
}

/// A train set and a test set drawn independently; see [`toy_digits_split`].
#[derive(Clone, Debug, PartialEq)]
pub struct ToyDigits {
    /// The training samples.
    pub train: Dataset,
    /// The held-out samples; none of its images equals a training image.
    pub test: Dataset,
}

/// Draws `n` toy digit images from `rng`.
///
/// The classes are balanced (their counts differ by at most 1) and come in a shuffled order. The
/// same rng state gives bit-identical data.
///
/// ```
/// use teenygrad::data::{toy_digits, FEATURES};
/// use teenygrad::rand::{SeedableRng, rngs::StdRng};
///
/// let data = toy_digits(25, &mut StdRng::seed_from_u64(7));
/// assert_eq!(data.len(), 25);
/// assert!(data.class_counts().iter().all(|&c| c == 2 || c == 3));
/// assert!(data.images.iter().flatten().all(|&v| (0.0..=1.0).contains(&v)));
///
/// let again = toy_digits(25, &mut StdRng::seed_from_u64(7));
/// assert_eq!(data, again);
/// ```
pub fn toy_digits<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Dataset {
    let mut labels: Vec<u8> = (0..n).map(|i| (i % CLASSES) as u8).collect();
    // Which classes get the extra samples when n is not a multiple of CLASSES is itself random.
    let offset = rng.random_range(0..CLASSES) as u8;
    for label in &mut labels {
        *label = (*label + offset) % CLASSES as u8;
    }
    fisher_yates(&mut labels, rng);
    let images = labels.iter().map(|&d| render_digit(d, rng)).collect();
    Dataset { images, labels }
}

/// Draws a train set of `n_train` and a test set of `n_test` toy digits from `seed`.
///
/// The two sets come from independent generators seeded from `seed` (each a
/// [`rand::rngs::StdRng`]); any test image bit-identical to a training image is re-drawn, so no
/// image is shared. Both sets are balanced as in [`toy_digits`]. Reproducible for a given `seed`
/// and a given version of `rand` (the lock file pins it).
///
/// ```
/// use teenygrad::data::toy_digits_split;
///
/// let digits = toy_digits_split(42, 100, 50);
/// assert_eq!((digits.train.len(), digits.test.len()), (100, 50));
/// assert!(digits.test.images.iter().all(|img| !digits.train.images.contains(img)));
/// assert_eq!(digits, toy_digits_split(42, 100, 50));
/// ```
pub fn toy_digits_split(seed: u64, n_train: usize, n_test: usize) -> ToyDigits {
    let mut train_rng = StdRng::seed_from_u64(splitmix64(seed ^ 0x7472_6169_6e5f_7365));
    let mut test_rng = StdRng::seed_from_u64(splitmix64(seed ^ 0x7465_7374_5f73_6565));
    let train = toy_digits(n_train, &mut train_rng);
    let mut test = toy_digits(n_test, &mut test_rng);
    let seen: HashSet<[u32; FEATURES]> = train.images.iter().map(image_bits).collect();
    for (image, &label) in test.images.iter_mut().zip(&test.labels) {
        while seen.contains(&image_bits(image)) {
            *image = render_digit(label, &mut test_rng);
        }
    }
    ToyDigits { train, test }
}

/// Draws one fresh image of `digit` (0–9) from `rng`.
///
/// # Panics
///
/// If `digit` is not below [`CLASSES`].
///
/// ```
/// use teenygrad::data::render_digit;
/// use teenygrad::rand::{SeedableRng, rngs::StdRng};
///
/// let image = render_digit(3, &mut StdRng::seed_from_u64(1));
/// assert!(image.iter().any(|&v| v > 0.5));
/// ```
#[track_caller]
pub fn render_digit<R: Rng + ?Sized>(digit: u8, rng: &mut R) -> [f32; FEATURES] {
    assert!(
        usize::from(digit) < CLASSES,
        "render_digit: digit {digit} is not in 0..=9"
    );
    let strokes = template(digit);

    // Placement: the glyph's box, its centre (shifted up to a pixel), slant, pen.
    let width = rng.random_range(3.0f32..=5.0);
    let height = rng.random_range(4.6f32..=6.4);
    let cx = 4.0 + rng.random_range(-1.0f32..=1.0);
    let cy = 4.0 + rng.random_range(-1.0f32..=1.0);
    let slant = rng.random_range(-0.4f32..=0.4);
    let pen = rng.random_range(1.0f32..=1.6);
    let intensity = rng.random_range(0.7f32..=1.0);
    let noise = rng.random_range(0.04f32..=0.12);

    // Each stroke is nudged on its own, so joins do not always meet exactly.
    let mut segments: Vec<[(f32, f32); 2]> = Vec::new();
    for stroke in &strokes {
        let jx = rng.random_range(-0.08f32..=0.08);
        let jy = rng.random_range(-0.08f32..=0.08);
        let place = |&(u, v): &(f32, f32)| {
            let y = cy + (v + jy - 0.5) * height;
            let x = cx + (u + jx - 0.5) * width + slant * (cy - y);
            (x, y)
        };
        let points: Vec<(f32, f32)> = stroke.iter().map(place).collect();
        segments.extend(points.windows(2).map(|w| [w[0], w[1]]));
    }

    let half_pen = pen / 2.0;
    let mut image = [0.0f32; FEATURES];
    for (i, pixel) in image.iter_mut().enumerate() {
        let px = (i % IMAGE_SIDE) as f32 + 0.5;
        let py = (i / IMAGE_SIDE) as f32 + 0.5;
        let distance = segments
            .iter()
            .map(|&[a, b]| segment_distance((px, py), a, b))
            .fold(f32::INFINITY, f32::min);
        let coverage = (half_pen + 0.5 - distance).clamp(0.0, 1.0);
        let value = intensity * coverage + noise * gaussian(rng);
        *pixel = value.clamp(0.0, 1.0);
    }
    image
}

/// Renders an image as text, one row a line, darker pixels as denser characters.
///
/// ```
/// use teenygrad::data::{image_to_ascii, FEATURES};
///
/// let text = image_to_ascii(&[1.0; FEATURES]);
/// assert_eq!(text.lines().count(), 8);
/// assert!(text.lines().all(|line| line == "@@@@@@@@"));
/// ```
pub fn image_to_ascii(image: &[f32; FEATURES]) -> String {
    const RAMP: &[u8] = b" .:-=+*#%@";
    let mut out = String::with_capacity(FEATURES + IMAGE_SIDE);
    for row in image.chunks(IMAGE_SIDE) {
        for &v in row {
            let level = (v.clamp(0.0, 1.0) * (RAMP.len() - 1) as f32).round() as usize;
            out.push(char::from(RAMP[level]));
        }
        out.push('\n');
    }
    out
}

fn image_bits(image: &[f32; FEATURES]) -> [u32; FEATURES] {
    image.map(f32::to_bits)
}

/// A shuffle in the Fisher–Yates order, drawing from `rng` only through `random_range`.
pub(crate) fn fisher_yates<T, R: Rng + ?Sized>(items: &mut [T], rng: &mut R) {
    for i in (1..items.len()).rev() {
        let j = rng.random_range(0..=i);
        items.swap(i, j);
    }
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A standard normal sample (Box–Muller, one of the pair).
fn gaussian<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    let u1: f32 = 1.0 - rng.random::<f32>(); // in (0, 1]
    let u2: f32 = rng.random::<f32>();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

fn segment_distance(p: (f32, f32), a: (f32, f32), b: (f32, f32)) -> f32 {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 {
        (((p.0 - a.0) * dx + (p.1 - a.1) * dy) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (qx, qy) = (a.0 + t * dx - p.0, a.1 + t * dy - p.1);
    (qx * qx + qy * qy).sqrt()
}

/// Points along an elliptic arc centred on `(cx, cy)` with radii `(rx, ry)`, from angle `from` to
/// `to` in degrees (0° points right, 90° down, as the y axis points down).
fn arc(cx: f32, cy: f32, rx: f32, ry: f32, from: f32, to: f32) -> Vec<(f32, f32)> {
    let steps = ((to - from).abs() / 30.0).ceil().max(1.0) as usize;
    (0..=steps)
        .map(|k| {
            let angle = (from + (to - from) * k as f32 / steps as f32).to_radians();
            (cx + rx * angle.cos(), cy + ry * angle.sin())
        })
        .collect()
}

/// The strokes of a digit, as polylines in the unit box (x right, y down).
fn template(digit: u8) -> Vec<Vec<(f32, f32)>> {
    match digit {
        0 => vec![arc(0.5, 0.5, 0.5, 0.5, 0.0, 360.0)],
        1 => vec![vec![(0.25, 0.25), (0.6, 0.0), (0.6, 1.0)]],
        2 => {
            let mut s = arc(0.5, 0.3, 0.5, 0.3, 190.0, 370.0);
            s.extend([(0.0, 1.0), (1.0, 1.0)]);
            vec![s]
        }
        3 => {
            let mut s = arc(0.45, 0.25, 0.5, 0.25, 210.0, 450.0);
            s.extend(arc(0.45, 0.73, 0.55, 0.27, 270.0, 510.0));
            vec![s]
        }
        4 => vec![vec![(0.75, 1.0), (0.75, 0.0), (0.0, 0.65), (1.0, 0.65)]],
        5 => {
            let mut s = vec![(1.0, 0.0), (0.1, 0.0), (0.05, 0.45)];
            s.extend(arc(0.45, 0.7, 0.55, 0.3, 230.0, 470.0));
            vec![s]
        }
        6 => {
            let mut s = vec![(0.9, 0.0)];
            s.extend(arc(0.5, 0.7, 0.5, 0.3, 210.0, 570.0));
            vec![s]
        }
        7 => vec![vec![(0.0, 0.0), (1.0, 0.0), (0.3, 1.0)]],
        8 => vec![
            arc(0.5, 0.25, 0.42, 0.25, 0.0, 360.0),
            arc(0.5, 0.73, 0.5, 0.27, 0.0, 360.0),
        ],
        9 => {
            let mut s = arc(0.5, 0.3, 0.5, 0.3, 0.0, 360.0);
            s.push((0.85, 1.0));
            vec![s]
        }
        _ => unreachable!("digits are checked by the caller"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_distance_basics() {
        assert_eq!(segment_distance((0.0, 1.0), (0.0, 0.0), (2.0, 0.0)), 1.0);
        assert_eq!(segment_distance((3.0, 0.0), (0.0, 0.0), (2.0, 0.0)), 1.0);
        assert_eq!(segment_distance((1.0, 1.0), (1.0, 1.0), (1.0, 1.0)), 0.0);
    }

    #[test]
    fn every_template_is_a_set_of_real_polylines() {
        for digit in 0..CLASSES as u8 {
            let strokes = template(digit);
            assert!(!strokes.is_empty());
            for stroke in strokes {
                assert!(stroke.len() >= 2, "digit {digit}");
                for (x, y) in stroke {
                    assert!(
                        (-0.1..=1.1).contains(&x) && (-0.1..=1.1).contains(&y),
                        "digit {digit}"
                    );
                }
            }
        }
    }

    #[test]
    fn fisher_yates_is_a_permutation() {
        let mut rng = StdRng::seed_from_u64(3);
        let mut items: Vec<usize> = (0..100).collect();
        fisher_yates(&mut items, &mut rng);
        assert_ne!(items, (0..100).collect::<Vec<_>>());
        items.sort_unstable();
        assert_eq!(items, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn majority_class_ties_go_low() {
        let data = Dataset {
            images: vec![[0.0; FEATURES]; 2],
            labels: vec![9, 4],
        };
        assert_eq!(data.majority_class(), 4);
        assert_eq!(Dataset::default().majority_class(), 0);
    }
}
