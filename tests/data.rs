//! Tests of the `data` module: toy digits, CSV and the batcher.

use std::collections::HashSet;
use std::path::PathBuf;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::data::{
    Batcher, CLASSES, CsvLayout, Dataset, FEATURES, Remainder, parse_csv, parse_csv_bytes, parse_csv_with,
    read_csv, read_csv_with, toy_digits, toy_digits_split, write_csv,
};

fn bits(image: &[f32; FEATURES]) -> [u32; FEATURES] {
    image.map(f32::to_bits)
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("teenygrad-test-{}-{name}", std::process::id()))
}

fn assert_balanced(data: &Dataset) {
    let counts = data.class_counts();
    let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced: {counts:?}");
    assert_eq!(counts.iter().sum::<usize>(), data.len());
}

// ---------------------------------------------------------------------------------------------
// Toy digits

#[test]
fn same_seed_gives_identical_data() {
    assert_eq!(toy_digits_split(5, 300, 100), toy_digits_split(5, 300, 100));
    let a = toy_digits(200, &mut StdRng::seed_from_u64(9));
    let b = toy_digits(200, &mut StdRng::seed_from_u64(9));
    assert_eq!(a.labels, b.labels);
    let a_bits: Vec<_> = a.images.iter().map(bits).collect();
    let b_bits: Vec<_> = b.images.iter().map(bits).collect();
    assert_eq!(a_bits, b_bits, "not bit-identical");
}

#[test]
fn distinct_seeds_give_different_data() {
    let a = toy_digits_split(1, 100, 50);
    let b = toy_digits_split(2, 100, 50);
    assert_ne!(a.train, b.train);
    assert_ne!(a.test, b.test);
    // Train and test of one seed come from independent streams, not the same one.
    let c = toy_digits_split(1, 50, 50);
    assert_ne!(c.train, c.test);
}

#[test]
fn classes_are_balanced_and_shuffled() {
    let mut rng = StdRng::seed_from_u64(0);
    for n in [0, 1, 7, 9, 10, 11, 99, 123, 1000] {
        let data = toy_digits(n, &mut rng);
        assert_eq!(data.len(), n);
        assert_eq!(data.images.len(), n);
        assert_balanced(&data);
    }
    let digits = toy_digits_split(3, 1003, 517);
    assert_balanced(&digits.train);
    assert_balanced(&digits.test);
    // Shuffled: not in class order, not in a repeating 0..9 cycle.
    let labels = &digits.train.labels;
    assert!(labels.windows(2).any(|w| w[0] > w[1]));
    assert!(labels.windows(2).filter(|w| w[1] == (w[0] + 1) % 10).count() < labels.len() / 3);
}

#[test]
fn values_are_in_range_and_images_have_ink() {
    let digits = toy_digits_split(11, 2000, 500);
    for data in [&digits.train, &digits.test] {
        assert!(data.labels.iter().all(|&l| usize::from(l) < CLASSES));
        for image in &data.images {
            assert!(image.iter().all(|v| v.is_finite() && (0.0..=1.0).contains(v)));
            let max = image.iter().cloned().fold(0.0, f32::max);
            let ink = image.iter().filter(|&&v| v > 0.4).count();
            assert!(max > 0.5 && ink >= 4, "an image with almost no stroke");
        }
        let flat = data.flat_images();
        assert_eq!(flat.len(), data.len() * FEATURES);
        assert_eq!(&flat[FEATURES..2 * FEATURES], &data.images[1][..]);
    }
}

#[test]
fn no_test_image_is_a_train_image() {
    let digits = toy_digits_split(0, 5000, 2000);
    let train: HashSet<_> = digits.train.images.iter().map(bits).collect();
    assert!(digits.test.images.iter().all(|img| !train.contains(&bits(img))));
}

#[test]
fn majority_class_of_toy_digits() {
    let data = toy_digits(21, &mut StdRng::seed_from_u64(4));
    let counts = data.class_counts();
    let majority = data.majority_class();
    assert_eq!(counts[usize::from(majority)], 3);
    assert!(counts[..usize::from(majority)].iter().all(|&c| c == 2));
}

// Learnability: plain-Rust classifiers as a check that the task is neither trivial nor noise.

fn nearest_centroid_accuracy(train: &Dataset, test: &Dataset) -> f64 {
    let counts = train.class_counts();
    let mut centroids = [[0f32; FEATURES]; CLASSES];
    for (image, &label) in train.images.iter().zip(&train.labels) {
        let c = &mut centroids[usize::from(label)];
        for (acc, v) in c.iter_mut().zip(image) {
            *acc += v / counts[usize::from(label)] as f32;
        }
    }
    accuracy(test, |image| {
        let dist = |c: &[f32; FEATURES]| -> f32 { c.iter().zip(image).map(|(a, b)| (a - b) * (a - b)).sum() };
        (0..CLASSES)
            .min_by(|&a, &b| dist(&centroids[a]).total_cmp(&dist(&centroids[b])))
            .unwrap()
    })
}

fn one_nn_accuracy(train: &Dataset, test: &Dataset) -> f64 {
    accuracy(test, |image| {
        let mut best = (f32::INFINITY, 0);
        for (t, &label) in train.images.iter().zip(&train.labels) {
            let d: f32 = t.iter().zip(image).map(|(a, b)| (a - b) * (a - b)).sum();
            if d < best.0 {
                best = (d, usize::from(label));
            }
        }
        best.1
    })
}

/// Multinomial logistic regression trained by plain SGD: the linear baseline.
fn logistic_accuracy(train: &Dataset, test: &Dataset, epochs: usize) -> (f64, f64) {
    let mut w = [[0f32; FEATURES + 1]; CLASSES];
    let mut rng = StdRng::seed_from_u64(1);
    let logits = |w: &[[f32; FEATURES + 1]; CLASSES], image: &[f32; FEATURES]| {
        let mut z = [0f32; CLASSES];
        for (zc, wc) in z.iter_mut().zip(w) {
            *zc = wc[FEATURES] + wc.iter().zip(image).map(|(a, b)| a * b).sum::<f32>();
        }
        z
    };
    for epoch in 0..epochs {
        let lr = 0.1 / (1.0 + 0.05 * epoch as f32);
        for batch in Batcher::new(train.len(), 1, Remainder::Keep, &mut rng) {
            let i = batch[0];
            let image = &train.images[i];
            let mut z = logits(&w, image);
            let max = z.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = z
                .iter_mut()
                .map(|v| {
                    *v = (*v - max).exp();
                    *v
                })
                .sum();
            for (c, wc) in w.iter_mut().enumerate() {
                let grad = z[c] / sum
                    - if c == usize::from(train.labels[i]) {
                        1.0
                    } else {
                        0.0
                    };
                for (wk, x) in wc.iter_mut().zip(image) {
                    *wk -= lr * grad * x;
                }
                wc[FEATURES] -= lr * grad;
            }
        }
    }
    let predict = |image: &[f32; FEATURES]| {
        let z = logits(&w, image);
        (0..CLASSES).max_by(|&a, &b| z[a].total_cmp(&z[b])).unwrap()
    };
    (accuracy(train, predict), accuracy(test, predict))
}

fn accuracy(data: &Dataset, predict: impl Fn(&[f32; FEATURES]) -> usize) -> f64 {
    let correct = data
        .images
        .iter()
        .zip(&data.labels)
        .filter(|(image, label)| predict(image) == usize::from(**label))
        .count();
    correct as f64 / data.len() as f64
}

#[test]
fn task_is_learnable_but_not_linear() {
    let digits = toy_digits_split(0, 2000, 2000);
    let centroid = nearest_centroid_accuracy(&digits.train, &digits.test);
    let (linear_train, linear_test) = logistic_accuracy(&digits.train, &digits.test, 20);
    let one_nn = one_nn_accuracy(&digits.train, &digits.test);
    eprintln!(
        "nearest centroid {centroid:.4}, logistic train {linear_train:.4} test {linear_test:.4}, \
         1-NN {one_nn:.4}"
    );
    // Far above chance (0.1) but far from solved by a template per class ...
    assert!((0.55..0.80).contains(&centroid), "nearest centroid {centroid}");
    // ... a linear model stays well short even on its own training data ...
    assert!((0.75..0.92).contains(&linear_test), "logistic test {linear_test}");
    assert!(linear_train < 0.95, "logistic train {linear_train}");
    // ... while a non-linear rule separates the classes.
    assert!(one_nn > 0.95, "1-NN {one_nn}");
    assert!(one_nn > linear_test + 0.08);
}

// ---------------------------------------------------------------------------------------------
// CSV

fn row(label: &str, value: &str) -> String {
    format!("{label}{}", format!(",{value}").repeat(FEATURES))
}

fn data_error(result: teenygrad::Result<Dataset>) -> (String, String) {
    match result {
        Err(Error::Data { location, message }) => (location, message),
        other => panic!("expected a data error, got {other:?}"),
    }
}

#[test]
fn csv_round_trip_is_exact() {
    let digits = toy_digits_split(8, 300, 0);
    let path = temp_path("round-trip.csv");
    write_csv(&path, &digits.train).unwrap();
    let back = read_csv(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(back.labels, digits.train.labels);
    let a: Vec<_> = back.images.iter().map(bits).collect();
    let b: Vec<_> = digits.train.images.iter().map(bits).collect();
    assert_eq!(a, b);
}

#[test]
fn csv_accepts_header_crlf_bom_spaces_and_trailing_blank_lines() {
    let text = format!(
        "\u{feff}label,p0\r\n{}\r\n{}\r\n\r\n\n  \n",
        row("3", "0.25"),
        row(" 9 ", " 1 ")
    );
    let data = parse_csv(&text, "ok.csv").unwrap();
    assert_eq!(data.labels, vec![3, 9]);
    assert!(data.images[0].iter().all(|&v| v == 0.25));
    assert!(data.images[1].iter().all(|&v| v == 1.0));
    // No header and no final newline.
    let data = parse_csv(&format!("{}\n{}", row("0", "0"), row("1", "1e-1")), "ok.csv").unwrap();
    assert_eq!(data.labels, vec![0, 1]);
    assert_eq!(data.images[1][5], 0.1);
}

#[test]
fn csv_wrong_column_count() {
    let text = format!("label\n{}\n{}\n", row("1", "0"), row("1", "0") + ",0.5");
    let (location, message) = data_error(parse_csv(&text, "cols.csv"));
    assert_eq!(location, "cols.csv:3");
    assert!(
        message.contains("expected 65") && message.contains("got 66"),
        "{message}"
    );

    let short = format!("{}\n", &row("1", "0")[..10]);
    let (location, message) = data_error(parse_csv(&short, "cols.csv"));
    assert_eq!(location, "cols.csv:1");
    assert!(message.contains("got 6"), "{message}");
}

#[test]
fn csv_non_number_names_field_and_column() {
    let mut fields: Vec<String> = row("4", "0.5").split(',').map(String::from).collect();
    fields[10] = "abc".to_string();
    let text = format!("{}\n{}\n", row("4", "0"), fields.join(","));
    let err = parse_csv(&text, "nan.csv").unwrap_err();
    let (location, message) = data_error(Err(err.clone()));
    assert_eq!(location, "nan.csv:2");
    assert!(
        message.contains("\"abc\"") && message.contains("column 11"),
        "{message}"
    );
    assert!(err.to_string().starts_with("nan.csv:2: "), "{err}");

    // A non-number label on a line after the first is an error, not a header.
    let text = format!("{}\nx{}\n", row("4", "0"), &row("4", "0")[1..]);
    let (location, message) = data_error(parse_csv(&text, "lbl.csv"));
    assert_eq!(location, "lbl.csv:2");
    assert!(
        message.contains("\"x\"") && message.contains("column 1"),
        "{message}"
    );
}

#[test]
fn csv_label_out_of_range() {
    for bad in ["10", "-1", "255", "3.5", "nan", "inf"] {
        let text = format!("{}\n{}\n", row("0", "0"), row(bad, "0"));
        let (location, message) = data_error(parse_csv(&text, "labels.csv"));
        assert_eq!(location, "labels.csv:2", "label {bad}");
        assert!(message.contains(&format!("\"{bad}\"")), "{message}");
        assert!(message.contains("0..=9"), "{message}");
    }
}

#[test]
fn csv_value_out_of_range() {
    for bad in ["1.5", "-0.1", "NaN", "inf", "-inf", "1e9"] {
        let mut fields: Vec<String> = row("2", "0.5").split(',').map(String::from).collect();
        fields[64] = bad.to_string();
        let text = format!("label\n{}\n", fields.join(","));
        let (location, message) = data_error(parse_csv(&text, "values.csv"));
        assert_eq!(location, "values.csv:2", "value {bad}");
        assert!(message.contains(&format!("\"{bad}\"")), "{message}");
        assert!(
            message.contains("column 65") && message.contains("[0, 1]"),
            "{message}"
        );
    }
}

#[test]
fn csv_not_utf8() {
    let mut bytes = format!("label\n{}\n", row("1", "0")).into_bytes();
    bytes.extend_from_slice(b"2,\xff\xfe\n");
    let path = temp_path("latin1.csv");
    std::fs::write(&path, &bytes).unwrap();
    let result = read_csv(&path);
    std::fs::remove_file(&path).ok();
    let (location, message) = data_error(result);
    assert!(location.ends_with("latin1.csv:3"), "{location}");
    assert!(message.contains("UTF-8"), "{message}");
}

#[test]
fn csv_empty_or_header_only() {
    for (text, line) in [("", 1), ("\n\n", 2), ("label,p0,p1\n", 1), ("label\r\n\r\n", 2)] {
        let (location, message) = data_error(parse_csv(text, "empty.csv"));
        assert_eq!(location, format!("empty.csv:{line}"), "{text:?}");
        assert!(message.contains("no data rows"), "{message}");
    }
}

#[test]
fn csv_blank_line_in_the_middle() {
    let text = format!("{}\n\n{}\n", row("1", "0"), row("2", "0"));
    let (location, message) = data_error(parse_csv(&text, "gap.csv"));
    assert_eq!(location, "gap.csv:2");
    assert!(
        message.starts_with("blank line in the middle of the data"),
        "{message}"
    );
    // Before any data, it is said so.
    let (location, message) = data_error(parse_csv(&format!("\n{}\n", row("1", "0")), "lead.csv"));
    assert_eq!(location, "lead.csv:1");
    assert!(message.starts_with("blank line before the data"), "{message}");
}

#[test]
fn csv_missing_file_is_an_io_error() {
    let path = temp_path("does-not-exist.csv");
    match read_csv(&path) {
        Err(Error::Io { path: p, message }) => {
            assert!(p.ends_with("does-not-exist.csv"));
            assert!(!message.is_empty());
        }
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn csv_write_rejects_what_it_could_not_read_back() {
    let path = temp_path("invalid-write.csv");
    let bad_label = Dataset {
        images: vec![[0.0; FEATURES]],
        labels: vec![10],
    };
    assert!(matches!(write_csv(&path, &bad_label), Err(Error::Data { .. })));
    let bad_value = Dataset {
        images: vec![[f32::NAN; FEATURES]],
        labels: vec![1],
    };
    assert!(matches!(write_csv(&path, &bad_value), Err(Error::Data { .. })));
    let mismatched = Dataset {
        images: vec![],
        labels: vec![1],
    };
    assert!(matches!(write_csv(&path, &mismatched), Err(Error::Data { .. })));
    // Empty: a header alone, which read_csv would reject.
    let err = write_csv(&path, &Dataset::default()).unwrap_err();
    assert!(err.to_string().contains("cannot write an empty dataset"), "{err}");
    assert!(!path.exists(), "nothing is written for an invalid dataset");
}

#[test]
fn csv_parse_never_panics() {
    let mut rng = StdRng::seed_from_u64(2024);
    // Random byte strings, weighted toward CSV-ish bytes.
    const ALPHABET: &[u8] = b"0123456789.,-+eE \r\n\tnaNifINF\xff\xc3\xa9";
    for _ in 0..3000 {
        let len = rng.random_range(0..200);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.random_bool(0.8) {
                    ALPHABET[rng.random_range(0..ALPHABET.len())]
                } else {
                    rng.random()
                }
            })
            .collect();
        let _ = parse_csv_bytes(&bytes, "fuzz.csv");
    }
    // Mutations of a valid file.
    let mut valid = Vec::new();
    let path = temp_path("fuzz-seed.csv");
    write_csv(&path, &toy_digits_split(0, 4, 0).train).unwrap();
    valid.extend(std::fs::read(&path).unwrap());
    std::fs::remove_file(&path).ok();
    let mut accepted = 0;
    for _ in 0..3000 {
        let mut bytes = valid.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..bytes.len());
            match rng.random_range(0..4) {
                0 => bytes[at] = rng.random(),
                1 => bytes[at] = ALPHABET[rng.random_range(0..ALPHABET.len())],
                2 => {
                    bytes.remove(at);
                }
                _ => bytes.truncate(at.max(1)),
            }
            if bytes.is_empty() {
                break;
            }
        }
        if let Ok(data) = parse_csv_bytes(&bytes, "fuzz.csv") {
            accepted += 1;
            assert!(data.labels.iter().all(|&l| l < 10));
            assert!(data.images.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
        }
    }
    assert!(accepted > 0 && accepted < 3000, "accepted {accepted}");
}

/// Lines in UCI's optdigits layout: 64 counts in 0..=16, then the label.
fn uci_lines(samples: &[(u8, [u32; FEATURES])]) -> String {
    let mut text = String::new();
    for (label, counts) in samples {
        for c in counts {
            text += &format!("{c},");
        }
        text += &format!("{label}\n");
    }
    text
}

#[test]
fn csv_uci_layout_reads_counts_as_sixteenths() {
    let mut rng = StdRng::seed_from_u64(16);
    let samples: Vec<(u8, [u32; FEATURES])> = (0..50)
        .map(|i| ((i % 10) as u8, std::array::from_fn(|_| rng.random_range(0..=16))))
        .collect();
    let data = parse_csv_with(&uci_lines(&samples), "optdigits.tra", CsvLayout::UCI_OPTDIGITS).unwrap();
    assert_eq!(data.labels, samples.iter().map(|s| s.0).collect::<Vec<_>>());
    for (image, (_, counts)) in data.images.iter().zip(&samples) {
        // k/16 is exact in f32.
        let want: [u32; FEATURES] = counts.map(|c| (c as f32 / 16.0).to_bits());
        assert_eq!(bits(image), want);
    }
    // The same dataset, written in the default layout and read back, is the same.
    let path = temp_path("uci-rewritten.csv");
    write_csv(&path, &data).unwrap();
    assert_eq!(read_csv(&path).unwrap(), data);
    // And read from a file in its own layout.
    std::fs::write(&path, uci_lines(&samples)).unwrap();
    assert_eq!(read_csv_with(&path, CsvLayout::UCI_OPTDIGITS).unwrap(), data);
    std::fs::remove_file(&path).ok();
    // The builder spells the same layout; the default is `read_csv`'s.
    assert_eq!(
        CsvLayout::default().label_last().pixel_max(16.0),
        CsvLayout::UCI_OPTDIGITS
    );
    let own = format!("{}\n", row("3", "0.5"));
    assert_eq!(
        parse_csv_with(&own, "t", CsvLayout::default()).unwrap(),
        parse_csv(&own, "t").unwrap()
    );
}

#[test]
fn csv_uci_layout_errors_name_its_columns() {
    let counts = [[7u32; FEATURES]];
    let line = |label: &str, pixel: usize, value: &str| {
        let mut fields: Vec<String> = counts[0].iter().map(u32::to_string).collect();
        fields[pixel] = value.to_string();
        format!("{},{label}\n", fields.join(","))
    };
    let uci = CsvLayout::UCI_OPTDIGITS;
    for (text, want) in [
        (
            line("10", 0, "7"),
            "u:1: column 65 (label): \"10\" is not a class label in 0..=9",
        ),
        (line("x", 0, "7"), "u:1: column 65 (label): \"x\" is not a number"),
        (
            line("3", 0, "17"),
            "u:1: column 1 (pixel 0): \"17\" is outside [0, 16]",
        ),
        (
            line("3", 63, "-1"),
            "u:1: column 64 (pixel 63): \"-1\" is outside [0, 16]",
        ),
        (
            line("3", 5, "NaN"),
            "u:1: column 6 (pixel 5): \"NaN\" is outside [0, 16]",
        ),
        (
            "4,2,3\n".to_string(),
            "u:1: expected 65 columns (64 pixels and a label), got 3",
        ),
    ] {
        assert_eq!(parse_csv_with(&text, "u", uci).unwrap_err().to_string(), want);
    }
    // Read in the default layout, a file of counts says which layout reads it.
    let (location, message) = data_error(parse_csv(&line("3", 0, "7"), "optdigits.tra"));
    assert_eq!(location, "optdigits.tra:1");
    assert!(
        message.starts_with("column 2 (pixel 0): \"7\" is outside [0, 1]; ")
            && message.contains("CsvLayout::UCI_OPTDIGITS"),
        "{message}"
    );
    // A value out of range that is not a count gets no hint.
    let (_, message) = data_error(parse_csv(&row("2", "1.5"), "t"));
    assert!(!message.contains("CsvLayout"), "{message}");
}

#[test]
fn csv_layout_pixel_max_must_be_finite_and_positive() {
    let text = uci_lines(&[(1, [0; FEATURES])]);
    for max in [0.0, -0.0, -16.0, f32::NAN, f32::INFINITY] {
        let layout = CsvLayout::UCI_OPTDIGITS.pixel_max(max);
        let err = parse_csv_with(&text, "t", layout).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    op: "parse_csv_with",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("pixel_max must be finite and positive"),
            "{err}"
        );
        // Checked before the file is opened: a missing file is not the error.
        let err = read_csv_with(temp_path("never-written.csv"), layout).unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    op: "read_csv_with",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    // Extreme but valid ranges keep every pixel within [0, 1].
    for max in [f32::MIN_POSITIVE / 4.0, 1e-30, f32::MAX] {
        let field = format!("{max:e}");
        let text = format!("{},{},0\n", field, vec!["0"; FEATURES - 1].join(","));
        let data = parse_csv_with(&text, "t", CsvLayout::default().label_last().pixel_max(max)).unwrap();
        assert_eq!((data.images[0][0], data.images[0][1]), (1.0, 0.0), "max {max}");
    }
}

// ---------------------------------------------------------------------------------------------
// Batcher

#[test]
fn batcher_keep_covers_every_index_once() {
    let mut rng = StdRng::seed_from_u64(5);
    for (len, size) in [(0, 3), (1, 1), (10, 3), (10, 10), (10, 32), (1000, 64), (64, 8)] {
        let batches: Vec<Vec<usize>> = Batcher::new(len, size, Remainder::Keep, &mut rng).collect();
        assert_eq!(batches.len(), len.div_ceil(size), "len {len} size {size}");
        for b in &batches[..batches.len().saturating_sub(1)] {
            assert_eq!(b.len(), size);
        }
        let mut all = batches.concat();
        all.sort_unstable();
        assert_eq!(all, (0..len).collect::<Vec<_>>(), "len {len} size {size}");
    }
}

#[test]
fn batcher_drop_drops_the_remainder() {
    let mut rng = StdRng::seed_from_u64(6);
    for (len, size) in [(10, 3), (10, 10), (10, 32), (1000, 64), (64, 8)] {
        let batcher = Batcher::new(len, size, Remainder::Drop, &mut rng);
        assert_eq!(batcher.len(), len / size);
        let batches: Vec<Vec<usize>> = batcher.collect();
        assert_eq!(batches.len(), len / size);
        assert!(batches.iter().all(|b| b.len() == size));
        let all: HashSet<usize> = batches.concat().into_iter().collect();
        assert_eq!(all.len(), len / size * size);
        assert!(all.iter().all(|&i| i < len));
    }
}

#[test]
fn batcher_shuffles_by_rng_state() {
    let order = |rng: &mut StdRng| {
        Batcher::new(100, 10, Remainder::Keep, rng)
            .flatten()
            .collect::<Vec<_>>()
    };
    let mut rng = StdRng::seed_from_u64(7);
    let first = order(&mut rng);
    let second = order(&mut rng);
    assert_ne!(first, second, "successive epochs must differ");
    assert_ne!(first, (0..100).collect::<Vec<_>>(), "must be shuffled");
    assert_eq!(
        first,
        order(&mut StdRng::seed_from_u64(7)),
        "same state, same order"
    );
    assert_ne!(first, order(&mut StdRng::seed_from_u64(8)));
}

#[test]
#[should_panic(expected = "batch_size must be at least 1")]
fn batcher_zero_batch_size_panics() {
    let _ = Batcher::new(10, 0, Remainder::Keep, &mut StdRng::seed_from_u64(0));
}

#[test]
fn gather_returns_the_samples_in_order() {
    let data = toy_digits(50, &mut StdRng::seed_from_u64(1));
    let indices = [49, 0, 7, 7];
    let (images, labels) = data.gather(&indices);
    assert_eq!(images.len(), indices.len() * FEATURES);
    for (k, &i) in indices.iter().enumerate() {
        assert_eq!(labels[k], usize::from(data.labels[i]));
        assert_eq!(&images[k * FEATURES..(k + 1) * FEATURES], &data.images[i][..]);
    }
    assert_eq!(data.gather(&[]), (vec![], vec![]));
}

#[test]
#[should_panic(expected = "out of range")]
fn gather_out_of_range_panics() {
    let data = toy_digits(5, &mut StdRng::seed_from_u64(1));
    let _ = data.gather(&[5]);
}
