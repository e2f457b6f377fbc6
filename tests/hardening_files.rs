//! Hostile files: the CSV reader and the safetensors loader given crafted and randomly mutated
//! bytes. Every input gives `Ok` or an [`Error::Data`] (no panic, no abort); a failed load leaves
//! the model untouched, and an accepted file is one whose data section is exactly the loaded
//! parameters' bytes, each found verbatim in it (for CSV: a dataset of valid labels and pixels,
//! one sample per data line).
//!
//! `tests/data.rs` and `tests/safetensors.rs` already cover random bytes, bit flips, truncation,
//! bad lengths, wrong shapes, dtypes, names and offsets summing to overflow. This file adds
//! structured hostile cases (a tensor of 2^60 bytes, dims whose product overflows, overlapping,
//! out-of-order and gapped offsets, header lengths at and beyond the file's end, duplicate names,
//! deep JSON nesting, escaped names, NaN data; for CSV: NaN and infinity spellings, overflowing
//! numbers, odd line ends, NUL bytes, overlong and surrogate UTF-8, huge lines) and a seeded
//! loop of structure-aware mutations (header fields rewritten, entries duplicated, dropped or
//! swapped, lengths changed, JSON junk inserted; CSV fields replaced by hostile tokens, lines
//! duplicated, dropped or split).
//!
//! The loops run 4,000 inputs each in `cargo test`; `HARDENING_FILES_CASES=N` runs `N` each:
//!
//! ```text
//! HARDENING_FILES_CASES=1000000 cargo test --release --test hardening_files -- --nocapture
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::data::{Dataset, FEATURES, parse_csv_bytes};
use teenygrad::nn::{self, Init, Mlp, Params};
use teenygrad::prelude::*;

fn cases_per_loop() -> usize {
    std::env::var("HARDENING_FILES_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000)
}

// ---------------------------------------------------------------------------------------------
// safetensors

fn seeded_mlp(seed: u64) -> Mlp<4, 8, 3> {
    Mlp::<4, 8, 3>::init(&mut StdRng::seed_from_u64(seed))
}

/// The parameters of `Mlp<4, 8, 3>` as a valid file lays them out: name, shape, offsets.
const LAYOUT: [(&str, &[u64], (u64, u64)); 4] = [
    ("0.bias", &[8], (0, 32)),
    ("0.weight", &[8, 4], (32, 160)),
    ("2.bias", &[3], (160, 172)),
    ("2.weight", &[3, 8], (172, 268)),
];

fn entry(name: &str, dtype: &str, shape: &[u64], (start, end): (u64, u64)) -> String {
    format!(r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{start},{end}]}}"#)
}

fn standard_entries() -> Vec<String> {
    LAYOUT
        .iter()
        .map(|&(name, shape, offsets)| entry(name, "F32", shape, offsets))
        .collect()
}

fn header_of(entries: &[String]) -> String {
    format!("{{{}}}", entries.join(","))
}

/// A file: the header's length (little-endian u64), the header, the data.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// The data section of a valid file for `model`.
fn data_of(model: &Mlp<4, 8, 3>) -> Vec<u8> {
    let bytes = nn::to_bytes(model).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    bytes[8 + n..].to_vec()
}

/// What loading `bytes` into a fresh model did.
#[derive(Debug)]
enum Outcome {
    Loaded(Vec<(String, Vec<usize>, Vec<f32>)>),
    Rejected(String),
}

/// Loads `bytes` into a seeded model and checks the contract: no panic; on error a `Data` error
/// located at the data (or one of its tensors) and the model unchanged; on success the file's
/// data section holds nothing but the parameters (the format tiles it exactly and extra tensors
/// are refused), and each parameter's loaded bytes occur in it verbatim.
fn load(bytes: &[u8], what: &str) -> Outcome {
    let mut model = seeded_mlp(1);
    let before = model.state_dict();
    let result = catch_unwind(AssertUnwindSafe(|| nn::from_bytes(&mut model, bytes)))
        .unwrap_or_else(|_| panic!("{what}: from_bytes panicked on {} bytes: {bytes:?}", bytes.len()));
    match result {
        Ok(()) => {
            let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
            let data = &bytes[8 + n..];
            let state = model.state_dict();
            let total: usize = state.iter().map(|(_, _, v)| 4 * v.len()).sum();
            assert_eq!(
                data.len(),
                total,
                "{what}: accepted a data section with more than the parameters"
            );
            for (name, _, values) in &state {
                let loaded: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
                assert!(
                    data.windows(loaded.len()).any(|w| w == loaded.as_slice()),
                    "{what}: {name} loaded values that are not in the file"
                );
            }
            Outcome::Loaded(state)
        }
        Err(Error::Data { location, message }) => {
            assert!(
                location == "safetensors data" || location.starts_with("safetensors data: tensor "),
                "{what}: error located at {location:?}"
            );
            assert!(!message.is_empty(), "{what}: an error without a message");
            assert_eq!(
                model.state_dict(),
                before,
                "{what}: a failed load changed the model"
            );
            Outcome::Rejected(format!("{location}: {message}"))
        }
        Err(other) => panic!("{what}: expected a Data error, got {other:?}"),
    }
}

fn rejected(bytes: &[u8], what: &str, needle: &str) {
    match load(bytes, what) {
        Outcome::Rejected(message) => assert!(
            message.contains(needle),
            "{what}: message {message:?} lacks {needle:?}"
        ),
        Outcome::Loaded(_) => panic!("{what}: accepted"),
    }
}

fn loaded(bytes: &[u8], what: &str, expected: &Mlp<4, 8, 3>) {
    match load(bytes, what) {
        Outcome::Loaded(state) => assert_eq!(state, expected.state_dict(), "{what}"),
        Outcome::Rejected(message) => panic!("{what}: rejected: {message}"),
    }
}

#[test]
fn safetensors_structured_hostile_headers() {
    let source = seeded_mlp(7);
    let data = data_of(&source);
    let normal = standard_entries();
    loaded(
        &file(&header_of(&normal), &data),
        "the hand-written header",
        &source,
    );

    // Entries listed out of offset order are valid (the format sorts them by offset).
    let mut reversed = normal.clone();
    reversed.reverse();
    loaded(
        &file(&header_of(&reversed), &data),
        "entries in reverse order",
        &source,
    );
    // Names spelled with JSON escapes are the same names.
    let escaped: Vec<String> = normal
        .iter()
        .map(|e| e.replacen("\"0.", "\"\\u0030.", 1))
        .collect();
    loaded(&file(&header_of(&escaped), &data), "escaped names", &source);
    // Metadata and whitespace are allowed.
    let spaced = format!(
        "{{ \"__metadata__\" : {{\"format\": \"pt\"}} ,\n {} }}",
        normal.join(" ,\n ")
    );
    loaded(&file(&spaced, &data), "metadata and whitespace", &source);

    // A tensor claiming 2^60 bytes, alone or as an extra; and 2^60 elements of a parameter.
    let mut huge = normal.clone();
    huge.push(entry("huge", "F32", &[1 << 58], (268, 1 << 60)));
    rejected(
        &file(&header_of(&huge), &data),
        "a 2^60-byte tensor",
        "past the end of the file",
    );
    let mut huge_param = normal.clone();
    huge_param[3] = entry("2.weight", "F32", &[1 << 30, 1 << 30], (172, (1 << 62) + 172));
    rejected(
        &file(&header_of(&huge_param), &data),
        "a 2^62-byte parameter",
        "past the end of the file",
    );
    // Dims each smaller than the file whose product overflows usize.
    let mut big_data = data.clone();
    big_data.resize(70_000, 0);
    let mut overflow = normal.clone();
    overflow.push(entry("huge", "F32", &[65_536; 4], (268, 70_000)));
    rejected(
        &file(&header_of(&overflow), &big_data),
        "dims whose product overflows",
        "overflow",
    );
    // ... and whose product is 2^32 elements of 4 bytes: fits usize, mismatches the offsets.
    let mut big = normal.clone();
    big.push(entry("big", "F32", &[65_536, 65_536], (268, 70_000)));
    rejected(
        &file(&header_of(&big), &big_data),
        "a 16 GiB tensor in a 70 kB file",
        "not a valid",
    );

    // Overlapping offsets, a gap, offsets past the data, a reversed range, offsets that do not
    // start at 0.
    let with = |i: usize, offsets: (u64, u64)| {
        let mut entries = normal.clone();
        let (name, shape, _) = LAYOUT[i];
        entries[i] = entry(name, "F32", shape, offsets);
        header_of(&entries)
    };
    for (what, i, offsets) in [
        ("overlapping offsets", 1, (16, 144)),
        ("a gap between tensors", 2, (164, 176)),
        ("offsets past the data", 3, (172, 300)),
        ("a reversed range", 3, (268, 172)),
        ("an empty range", 0, (0, 0)),
    ] {
        rejected(
            &file(&with(i, offsets), &data),
            what,
            "not a valid safetensors file",
        );
    }
    let shifted: Vec<String> = LAYOUT
        .iter()
        .map(|&(name, shape, (s, e))| entry(name, "F32", shape, (s + 4, e + 4)))
        .collect();
    let mut padded_data = vec![0u8; 4];
    padded_data.extend(&data);
    rejected(
        &file(&header_of(&shifted), &padded_data),
        "offsets starting at 4",
        "not a valid safetensors file",
    );

    // Duplicate names. JSON keeps the last of duplicate keys (as serde, Python and the
    // safetensors crate do): an identical duplicate is harmless and loads; a different one leaves
    // a range of the data unclaimed or misdescribed and is rejected.
    let mut identical = normal.clone();
    identical.push(normal[1].clone());
    loaded(
        &file(&header_of(&identical), &data),
        "an identical duplicate entry",
        &source,
    );
    let mut extended = data.clone();
    extended.extend(&data[32..160]);
    let mut moved_later = normal.clone();
    moved_later.push(entry("0.weight", "F32", &[8, 4], (268, 396)));
    rejected(
        &file(&header_of(&moved_later), &extended),
        "a duplicate name claiming more data",
        "not a valid safetensors file",
    );
    let mut moved_earlier = normal.clone();
    moved_earlier.insert(0, entry("0.weight", "F32", &[8, 4], (268, 396)));
    rejected(
        &file(&header_of(&moved_earlier), &extended),
        "a duplicate name whose first entry claims more data",
        "not a valid safetensors file",
    );
    let mut reshaped = normal.clone();
    reshaped.push(entry("0.weight", "F32", &[4, 8], (32, 160)));
    rejected(
        &file(&header_of(&reshaped), &data),
        "a duplicate name with another shape, last",
        "has shape [4, 8]",
    );
    let mut dtype_dup = normal.clone();
    dtype_dup.push(entry("2.bias", "I32", &[3], (160, 172)));
    rejected(
        &file(&header_of(&dtype_dup), &data),
        "a duplicate name with another dtype, last",
        "dtype",
    );

    // Header lengths at and around the file's end, and beyond what fits the format's limit.
    let good = file(&header_of(&normal), &data);
    let header_len = good.len() - 8 - data.len();
    for (what, n) in [
        ("a header length one past the file", (good.len() - 8 + 1) as u64),
        ("a header length covering the whole file", (good.len() - 8) as u64),
        ("a header length one short", (header_len - 1) as u64),
        ("a header length one long", (header_len + 1) as u64),
        ("a zero header length", 0),
        ("a header length of 2^63", 1 << 63),
        ("a header length of 100 MB + 1", 100_000_001),
    ] {
        let mut bytes = good.clone();
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        rejected(&bytes, what, "not a valid safetensors file");
    }
    // A header alone, no data; data alone, no header.
    rejected(
        &file(&header_of(&normal), &[]),
        "no data",
        "past the end of the file",
    );
    rejected(&data, "no header", "not a valid safetensors file");

    // Deep JSON nesting: in a flattened (buffered) value, in metadata, as the whole header.
    for depth in [200, 100_000] {
        let (open, close) = ("[".repeat(depth), "]".repeat(depth));
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        for (what, header) in [
            (
                "a deeply nested extra value",
                format!("{{{},\"x\":{open}{close}}}", normal.join(",")),
            ),
            (
                "deeply nested objects",
                format!("{{{},\"x\":{objects}}}", normal.join(",")),
            ),
            (
                "deeply nested metadata",
                format!("{{\"__metadata__\":{open}{close},{}}}", normal.join(",")),
            ),
            ("a deeply nested header", format!("{open}{close}")),
        ] {
            rejected(&file(&header, &data), &format!("{what} ({depth})"), "not a valid");
        }
    }

    // Malformed fields.
    for (what, replacement) in [
        ("a negative dim", r#""shape":[-8]"#),
        ("a fractional dim", r#""shape":[8.5]"#),
        ("an exponent dim", r#""shape":[8e0]"#),
        ("a dim of 2^64", r#""shape":[18446744073709551616]"#),
        ("a string dim", r#""shape":["8"]"#),
        ("a null shape", r#""shape":null"#),
    ] {
        let header = header_of(&normal).replacen(r#""shape":[8]"#, replacement, 1);
        // Either the size check or the parser rejects it.
        rejected(&file(&header, &data), what, "safetensors data: ");
    }
    for (what, dtype, needle) in [
        ("an unknown dtype", "F33", "not a valid"),
        ("a lower-case dtype", "f32", "not a valid"),
        ("an empty dtype", "", "not a valid"),
        ("a U8 parameter of the right size", "U8", "dtype"),
    ] {
        let mut entries = normal.clone();
        let shape: &[u64] = if dtype == "U8" { &[32] } else { &[8] };
        entries[0] = entry("0.bias", dtype, shape, (0, 32));
        rejected(&file(&header_of(&entries), &data), what, needle);
    }
    let mut nul_name = normal.clone();
    nul_name[0] = entry("0.bias\\u0000", "F32", &[8], (0, 32));
    rejected(
        &file(&header_of(&nul_name), &data),
        "a name with a NUL",
        "is missing",
    );
    let mut bad_escape = normal.clone();
    bad_escape[0] = entry("0.bias\\ud800", "F32", &[8], (0, 32));
    rejected(
        &file(&header_of(&bad_escape), &data),
        "a lone surrogate escape",
        "not a valid",
    );
}

/// NaN and infinite parameters are values like any other: they load, and `check_finite` finds
/// them.
#[test]
fn safetensors_nan_data_loads_and_check_finite_names_it() {
    let source = seeded_mlp(3);
    let mut data = data_of(&source);
    data[32 + 4 * 5..32 + 4 * 6].copy_from_slice(&f32::NAN.to_le_bytes()); // 0.weight[1][1]
    data[160..164].copy_from_slice(&f32::NEG_INFINITY.to_le_bytes()); // 2.bias[0]
    let bytes = file(&header_of(&standard_entries()), &data);
    let Outcome::Loaded(_) = load(&bytes, "NaN data") else {
        panic!("NaN data was rejected")
    };
    let mut model = seeded_mlp(1);
    nn::from_bytes(&mut model, &bytes).unwrap();
    let err = model.0.weight.check_finite().unwrap_err();
    assert_eq!(err.to_string(), "element 5 of shape [8, 4]: is NaN");
    let bias = model.2.bias.as_ref().unwrap();
    assert_eq!(
        bias.check_finite().unwrap_err().to_string(),
        "element 0 of shape [3]: is -inf"
    );
    assert!(model.0.bias.as_ref().unwrap().is_finite());
}

/// A structure-aware mutation of a valid file's header, length prefix or data.
fn mutate_safetensors(rng: &mut StdRng, data: &[u8]) -> Vec<u8> {
    let mut entries = standard_entries();
    let mut data = data.to_vec();
    let mut length_delta: i64 = 0;
    let mut raw_length: Option<u64> = None;
    for _ in 0..rng.random_range(1..=3) {
        match rng.random_range(0..12) {
            // Rewrite one number of one entry.
            0 => {
                let i = rng.random_range(0..entries.len());
                let text = entries[i].clone();
                let digits: Vec<usize> = text
                    .char_indices()
                    .filter(|(_, c)| c.is_ascii_digit())
                    .map(|(k, _)| k)
                    .collect();
                if let Some(&at) = digits.get(rng.random_range(0..digits.len().max(1))) {
                    let end = text[at..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(text.len(), |k| at + k);
                    let old: u64 = text[at..end].parse().unwrap_or(0);
                    let number = match rng.random_range(0..8) {
                        0 => "0".to_string(),
                        1 => old.wrapping_add(1).to_string(),
                        2 => old.saturating_sub(1).to_string(),
                        3 => (1u64 << rng.random_range(10..64)).to_string(),
                        4 => u64::MAX.to_string(),
                        5 => "1".repeat(rng.random_range(20..60)),
                        6 => format!("-{old}"),
                        _ => rng.random_range(0..400u32).to_string(),
                    };
                    entries[i] = format!("{}{number}{}", &text[..at], &text[end..]);
                }
            }
            // Duplicate, drop or swap entries.
            1 => {
                let i = rng.random_range(0..entries.len());
                let copy = entries[i].clone();
                entries.insert(rng.random_range(0..=entries.len()), copy);
            }
            2 if entries.len() > 1 => {
                entries.remove(rng.random_range(0..entries.len()));
            }
            3 => {
                let (i, j) = (rng.random_range(0..4), rng.random_range(0..4));
                let offsets = |(s, e): (u64, u64)| (s, e);
                let (ni, si, oi) = LAYOUT[i];
                let (nj, sj, oj) = LAYOUT[j];
                if i < entries.len() && j < entries.len() {
                    entries[i] = entry(ni, "F32", si, offsets(oj));
                    entries[j] = entry(nj, "F32", sj, offsets(oi));
                }
            }
            // Rename, retype or reshape an entry.
            4 => {
                let i = rng.random_range(0..entries.len());
                let names = [
                    "0.weigh",
                    "0.weight ",
                    "x",
                    "",
                    "0.weight\\u0000",
                    "\\u0032.bias",
                    "é",
                ];
                let name = names[rng.random_range(0..names.len())];
                let at = entries[i].find("\":").unwrap_or(0);
                entries[i] = format!("\"{name}{}", &entries[i][at..]);
            }
            5 => {
                let i = rng.random_range(0..entries.len());
                let dtypes = ["F16", "BF16", "F64", "I32", "U8", "BOOL", "F8_E4M3", "F33", ""];
                let dtype = dtypes[rng.random_range(0..dtypes.len())];
                entries[i] = entries[i].replacen("\"F32\"", &format!("\"{dtype}\""), 1);
            }
            6 => {
                let i = rng.random_range(0..entries.len());
                let shapes = [
                    "[]",
                    "[0]",
                    "[1,8]",
                    "[8,1,4]",
                    "[4,8]",
                    "[32]",
                    "[0,1099511627776]",
                ];
                let shape = shapes[rng.random_range(0..shapes.len())];
                if let (Some(a), Some(b)) = (entries[i].find("[").filter(|_| true), entries[i].find("]")) {
                    entries[i] = format!("{}{shape}{}", &entries[i][..a], &entries[i][b + 1..]);
                }
            }
            // JSON junk: metadata, nesting, stray tokens.
            7 => {
                let depth = rng.random_range(1..300);
                let junk = match rng.random_range(0..5) {
                    0 => r#""__metadata__":{"k":"v"}"#.to_string(),
                    1 => r#""__metadata__":{"k":1}"#.to_string(),
                    2 => format!("\"deep\":{}{}", "[".repeat(depth), "]".repeat(depth)),
                    3 => format!("\"deep\":{}0{}", "{\"a\":".repeat(depth), "}".repeat(depth)),
                    _ => ["null", "{}", "[]", "\"\"", ":", ",", "\u{7f}"][rng.random_range(0..7)].to_string(),
                };
                entries.insert(rng.random_range(0..=entries.len()), junk);
            }
            // The length prefix.
            8 => length_delta += rng.random_range(-9..=9),
            9 => {
                raw_length = Some(match rng.random_range(0..3) {
                    0 => rng.random(),
                    1 => 1 << rng.random_range(0..64),
                    _ => rng.random_range(0..2000),
                })
            }
            // The data: truncated, extended, non-finite values.
            10 => match rng.random_range(0..3) {
                0 => data.truncate(rng.random_range(0..data.len().max(1))),
                1 => data.extend((0..rng.random_range(1..64)).map(|_| rng.random::<u8>())),
                _ if data.len() >= 4 => {
                    let at = 4 * rng.random_range(0..data.len() / 4);
                    let value =
                        [f32::NAN, f32::INFINITY, -0.0, f32::MIN_POSITIVE / 2.0][rng.random_range(0..4)];
                    data[at..at + 4].copy_from_slice(&value.to_le_bytes());
                }
                _ => data.clear(),
            },
            // Truncate the header text.
            _ => {
                let header = header_of(&entries);
                let cut = rng.random_range(0..header.len());
                let mut bytes = (cut as u64).to_le_bytes().to_vec();
                bytes.extend(&header.as_bytes()[..cut]);
                bytes.extend(&data);
                return bytes;
            }
        }
    }
    let header = header_of(&entries);
    let mut bytes = file(&header, &data);
    let n = raw_length.unwrap_or_else(|| (header.len() as i64 + length_delta).max(0) as u64);
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    bytes
}

#[test]
fn safetensors_seeded_structural_mutations() {
    let count = cases_per_loop();
    let mut rng = StdRng::seed_from_u64(0x4a2d_f11e);
    let data = data_of(&seeded_mlp(7));
    let (mut oks, mut errors) = (0usize, 0usize);
    for case in 0..count {
        let bytes = mutate_safetensors(&mut rng, &data);
        match load(&bytes, &format!("mutation {case}")) {
            Outcome::Loaded(_) => oks += 1,
            Outcome::Rejected(_) => errors += 1,
        }
    }
    println!("safetensors mutations: {count} inputs, {oks} loaded, {errors} rejected");
    assert_eq!(oks + errors, count);
    assert!(
        oks > count / 50 && errors > count / 2,
        "{oks} loaded, {errors} rejected"
    );
}

/// An optimizer state file (Adam's, for every parameter) mutated at random: header bytes
/// replaced (names, metadata, offsets), digits of the header changed, the file cut short. Loading
/// never panics, fails only with a `Data` error, and a failed load leaves the state as it was.
#[test]
fn optimizer_state_seeded_mutations() {
    use teenygrad::optim::{self, Adam, Optimizer};
    let count = cases_per_loop();
    let mut rng = StdRng::seed_from_u64(0x05ee_d0b7);
    let mut model = seeded_mlp(7);
    let mut adam = Adam::new(0.01);
    let x = Tensor::<Rank2<2, 4>>::rand(&mut rng);
    let y = Labels::new(vec![0, 2], Const).unwrap();
    cross_entropy(&nn::Module::forward(&model, x), &y)
        .unwrap()
        .backward();
    adam.step(&mut model);
    let good = optim::state_to_bytes(&adam, &model).unwrap();
    let header_end = 8 + u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let (mut oks, mut errors) = (0usize, 0usize);
    for case in 0..count {
        let mut bytes = good.clone();
        match rng.random_range(0..3) {
            0 => {
                for _ in 0..rng.random_range(1..4) {
                    let at = rng.random_range(8..header_end);
                    bytes[at] = rng.random();
                }
            }
            1 => {
                let digits: Vec<usize> = (8..header_end).filter(|&i| bytes[i].is_ascii_digit()).collect();
                let at = digits[rng.random_range(0..digits.len())];
                bytes[at] = b"0123456789-.e x"[rng.random_range(0..15)];
            }
            _ => bytes.truncate(rng.random_range(0..good.len())),
        }
        let mut loaded = adam.clone();
        let result = catch_unwind(AssertUnwindSafe(|| {
            optim::state_from_bytes(&mut loaded, &model, &bytes)
        }))
        .unwrap_or_else(|_| panic!("mutation {case}: state_from_bytes panicked on {bytes:?}"));
        match result {
            Ok(()) => oks += 1,
            Err(Error::Data { location, .. }) => {
                assert!(
                    location.starts_with("optimizer state data"),
                    "mutation {case}: {location}"
                );
                assert_eq!(
                    optim::state_to_bytes(&loaded, &model).unwrap(),
                    good,
                    "mutation {case}: a failed load changed the state"
                );
                errors += 1;
            }
            Err(other) => panic!("mutation {case}: {other:?}"),
        }
    }
    println!("optimizer state mutations: {count} inputs, {oks} loaded, {errors} rejected");
    assert!(errors > count / 2, "{oks} loaded, {errors} rejected");
}

// ---------------------------------------------------------------------------------------------
// CSV

fn row(label: &str, value: &str) -> String {
    format!("{label}{}", format!(",{value}").repeat(FEATURES))
}

/// Parses `bytes` and checks the contract: no panic; an error is a `Data` error at `name:line`
/// with a line that exists (or 1); an accepted dataset holds only labels below 10 and pixels in
/// [0, 1], one sample per data line.
fn parse(bytes: &[u8], what: &str) -> Result<Dataset, String> {
    let result = catch_unwind(|| parse_csv_bytes(bytes, "hostile.csv"))
        .unwrap_or_else(|_| panic!("{what}: parse_csv_bytes panicked on {bytes:?}"));
    match result {
        Ok(data) => {
            assert_eq!(data.images.len(), data.labels.len(), "{what}");
            assert!(data.labels.iter().all(|&l| l < 10), "{what}: label out of range");
            assert!(
                data.images.iter().flatten().all(|v| (0.0..=1.0).contains(v)),
                "{what}: pixel out of range"
            );
            let text = std::str::from_utf8(bytes).expect("accepted, so UTF-8");
            let text = text.strip_prefix('\u{feff}').unwrap_or(text);
            let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
            assert!(
                data.len() == lines || data.len() + 1 == lines,
                "{what}: {} samples from {lines} non-blank lines",
                data.len()
            );
            Ok(data)
        }
        Err(Error::Data { location, message }) => {
            let line: usize = location
                .strip_prefix("hostile.csv:")
                .and_then(|l| l.parse().ok())
                .unwrap_or_else(|| panic!("{what}: error located at {location:?}"));
            let lines = bytes.split(|&b| b == b'\n').count().max(1);
            assert!((1..=lines).contains(&line), "{what}: line {line} of {lines}");
            assert!(!message.is_empty());
            Err(message)
        }
        Err(other) => panic!("{what}: expected a Data error, got {other:?}"),
    }
}

#[test]
fn csv_structured_hostile_inputs() {
    let good = |value: &str| format!("label\n{}\n", row("3", value));
    // Pixel spellings: accepted ones and the rejected NaN, infinity and overflow spellings.
    for (value, expected) in [
        ("0.5", Some(0.5f32)),
        ("1e-50", Some(0.0)), // underflows to 0
        ("5e-1", Some(0.5)),
        (".5", Some(0.5)),
        ("+0.25", Some(0.25)),
        ("1.000000000000000000000000000001", Some(1.0)),
        ("-0", Some(-0.0)), // -0 is in [0, 1]
        ("NaN", None),
        ("nan", None),
        ("-NaN", None),
        ("inf", None),
        ("-inf", None),
        ("+infinity", None),
        ("Infinity", None),
        ("1e39", None), // overflows f32 to inf
        ("1.0000001", None),
        ("-1e-50", Some(-0.0)),
        ("0x1", None),
        ("1_0", None),
        ("٠", None),  // an Arabic-Indic zero
        ("０", None), // a full-width zero
        ("", None),
        ("0.5.5", None),
        ("\u{0}", None),
    ] {
        let what = format!("pixel {value:?}");
        match (parse(good(value).as_bytes(), &what), expected) {
            (Ok(data), Some(v)) => assert!(
                data.images[0].iter().all(|p| p.to_bits() == v.to_bits()),
                "{what}: {:?}",
                &data.images[0][..2]
            ),
            (Err(_), None) => {}
            (got, _) => panic!("{what}: got {got:?}"),
        }
    }
    // Label spellings.
    for (label, expected) in [
        ("3", Some(3u8)),
        ("3.0", Some(3)),
        ("3e0", Some(3)),
        ("+3", Some(3)),
        ("-0", Some(0)),
        ("9.999999999999999999", Some(10)), // parses as 10.0 in f64: rejected below
        ("10", None),
        ("-1", None),
        ("3.5", None),
        ("NaN", None),
        ("inf", None),
        ("1e400", None),
        ("18446744073709551619", None),
    ] {
        let what = format!("label {label:?}");
        let text = format!("{}\n", row(label, "0"));
        match (parse(text.as_bytes(), &what), expected) {
            (Ok(data), Some(l)) if l < 10 => assert_eq!(data.labels, vec![l], "{what}"),
            (Err(_), None) | (Err(_), Some(10)) => {}
            (got, _) => panic!("{what}: got {got:?}"),
        }
    }

    // Line ends, NULs, byte-order marks and encodings.
    let line = row("1", "0");
    let accepted: [(&str, Vec<u8>); 5] = [
        ("CRLF", format!("{line}\r\n{line}\r\n").into_bytes()),
        // The second CR ends the last field, and spaces around a field are ignored.
        ("CR CR LF", format!("{line}\r\r\n").into_bytes()),
        (
            "mixed LF and CRLF",
            format!("{line}\n{line}\r\n{line}").into_bytes(),
        ),
        ("a BOM", format!("\u{feff}{line}\n").into_bytes()),
        ("trailing blank lines", format!("{line}\n\n \n\t\n").into_bytes()),
    ];
    for (what, bytes) in accepted {
        assert!(parse(&bytes, what).is_ok(), "{what} was rejected");
    }
    let rejected: Vec<(&str, Vec<u8>)> = vec![
        ("a lone CR line end", format!("{line}\r{line}\r").into_bytes()),
        ("a NUL in a field", format!("{line}\0\n").into_bytes()),
        ("a NUL line", format!("{line}\n\0\n").into_bytes()),
        ("two BOMs", format!("\u{feff}\u{feff}{line}\n").into_bytes()),
        ("a BOM mid-file", format!("{line}\n\u{feff}{line}\n").into_bytes()),
        ("a UTF-16 BOM", [b"\xff\xfe".as_slice(), line.as_bytes()].concat()),
        ("UTF-16 text", line.bytes().flat_map(|b| [b, 0]).collect()),
        ("an overlong NUL", [line.as_bytes(), b"\xc0\x80\n"].concat()),
        ("a surrogate", [line.as_bytes(), b",\xed\xa0\x80\n"].concat()),
        ("a truncated sequence", [line.as_bytes(), b"\xe2\x82"].concat()),
        (
            "a blank line between rows",
            format!("{line}\n\n{line}\n").into_bytes(),
        ),
        ("only commas", ",".repeat(64).into_bytes()),
        ("only a header", b"label,p0\n".to_vec()),
        ("only blank lines", b"\n\n\r\n".to_vec()),
        (
            "a header of 64 numbers and a letter",
            format!("1{}a\n", ",0".repeat(63)).into_bytes(),
        ),
    ];
    for (what, bytes) in &rejected {
        assert!(parse(bytes, what).is_err(), "{what} was accepted");
    }

    // Size: a line of a million characters, 100,000 columns, a number of 100,000 digits, 20,000
    // rows. Each is answered (Ok or an error) without trouble.
    let long_field = format!("1,{}{}\n", "0".repeat(1_000_000), ",0".repeat(63));
    assert!(parse(long_field.as_bytes(), "a million-digit zero").is_ok());
    let digits = format!("{}\n", row("1", &"9".repeat(100_000)));
    let message = parse(digits.as_bytes(), "a 100,000-digit number").unwrap_err();
    assert!(
        message.contains("..."),
        "long fields are shortened in messages: {message}"
    );
    assert!(message.len() < 200, "{} characters", message.len());
    let wide = format!("1{}\n", ",0".repeat(100_000));
    assert!(
        parse(wide.as_bytes(), "100,000 columns")
            .unwrap_err()
            .contains("got 100001")
    );
    let many = format!("{line}\n").repeat(20_000);
    assert_eq!(parse(many.as_bytes(), "20,000 rows").unwrap().len(), 20_000);
}

/// Hostile tokens a mutation writes into a field.
const TOKENS: [&str; 24] = [
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "1e39",
    "-1e39",
    "1e-50",
    "-0",
    "0.5",
    "1",
    "0",
    "",
    " ",
    "1.0000001",
    "0x1",
    "1,0",
    "9",
    "10",
    "-1",
    "3.5",
    "\u{feff}",
    "é",
    "\0",
];

/// A structure-aware mutation of a valid CSV file.
fn mutate_csv(rng: &mut StdRng, lines: &[String]) -> Vec<u8> {
    let mut lines: Vec<String> = lines.to_vec();
    let mut raw_tail: Vec<u8> = Vec::new();
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..lines.len());
        match rng.random_range(0..8) {
            0 | 1 => {
                // One field replaced by a hostile token.
                let mut fields: Vec<String> = lines[i].split(',').map(str::to_string).collect();
                let f = rng.random_range(0..fields.len());
                fields[f] = TOKENS[rng.random_range(0..TOKENS.len())].to_string();
                lines[i] = fields.join(",");
            }
            2 => {
                let copy = lines[i].clone();
                lines.insert(rng.random_range(0..=lines.len()), copy);
            }
            3 if lines.len() > 1 => {
                lines.remove(i);
            }
            4 => {
                // Split a line, or join two.
                if let Some(at) = lines[i]
                    .match_indices(',')
                    .map(|(k, _)| k)
                    .nth(rng.random_range(0..64))
                {
                    let tail = lines[i][at + 1..].to_string();
                    lines[i].truncate(at);
                    lines.insert(i + 1, tail);
                }
            }
            5 => {
                let ends = ["\r", "\r\r", " ", "\t", ",", ",,", ";"];
                lines[i].push_str(ends[rng.random_range(0..ends.len())]);
            }
            6 => lines.insert(rng.random_range(0..=lines.len()), String::new()),
            _ => {
                let junk: [&[u8]; 5] = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\x00"];
                raw_tail.extend_from_slice(junk[rng.random_range(0..junk.len())]);
            }
        }
    }
    let mut bytes = lines
        .join(if rng.random_bool(0.2) { "\r\n" } else { "\n" })
        .into_bytes();
    if rng.random_bool(0.5) {
        bytes.push(b'\n');
    }
    let at = rng.random_range(0..=bytes.len());
    bytes.splice(at..at, raw_tail);
    bytes
}

#[test]
fn csv_seeded_structural_mutations() {
    let count = cases_per_loop();
    let mut rng = StdRng::seed_from_u64(0xc5f_f11e);
    let mut lines = vec![format!(
        "label{}",
        (0..FEATURES).map(|k| format!(",p{k}")).collect::<String>()
    )];
    for (label, value) in [("0", "0"), ("7", "0.25"), ("9", "1")] {
        lines.push(row(label, value));
    }
    let (mut oks, mut errors) = (0usize, 0usize);
    for case in 0..count {
        let bytes = mutate_csv(&mut rng, &lines);
        match parse(&bytes, &format!("mutation {case}")) {
            Ok(_) => oks += 1,
            Err(_) => errors += 1,
        }
    }
    println!("csv mutations: {count} inputs, {oks} accepted, {errors} rejected");
    assert!(
        oks > count / 50 && errors > count / 2,
        "{oks} accepted, {errors} rejected"
    );
}
