//! Saving and loading parameters in the safetensors format: interop with numpy's files, round
//! trips, every kind of bad file rejected with the model untouched, and arbitrary bytes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::nn::{self, Detach, Init, Linear, Mlp, Module, Param, Params};
use teenygrad::prelude::*;

// ---------------------------------------------------------------------------------------------
// Allocation tracking for this thread (the fuzz test bounds what one `from_bytes` allocates).

struct Tracking;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + size);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

fn note_dealloc(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(size)));
}

// SAFETY: forwards to the system allocator; the bookkeeping touches only const-initialized
// thread-locals without destructors, which never allocate.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: the caller's contract is passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_dealloc(layout.size());
        // SAFETY: the caller's contract is passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_dealloc(layout.size());
        note_alloc(new_size);
        // SAFETY: the caller's contract is passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// Runs `f` and returns its result with the largest single allocation and the peak growth of
/// live bytes on this thread while it ran.
fn measure<T>(f: impl FnOnce() -> T) -> (T, usize, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    let out = f();
    (out, LARGEST.with(Cell::get), PEAK.with(Cell::get) - base)
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn temp_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("safetensors-{}-{name}", std::process::id()))
}

fn seeded_mlp(seed: u64) -> Mlp<4, 8, 3> {
    Mlp::<4, 8, 3>::init(&mut StdRng::seed_from_u64(seed))
}

/// `label rows cols` then `rows` lines of numbers, as `make_safetensors_fixture.py` writes them.
fn read_matrices(text: &str) -> Vec<(String, Vec<Vec<f64>>)> {
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let mut out = Vec::new();
    while let Some(head) = lines.next() {
        let head: Vec<&str> = head.split_whitespace().collect();
        let (rows, cols): (usize, usize) = (head[1].parse().unwrap(), head[2].parse().unwrap());
        let m: Vec<Vec<f64>> = (0..rows)
            .map(|_| {
                lines
                    .next()
                    .unwrap()
                    .split_whitespace()
                    .map(|v| v.parse().unwrap())
                    .collect()
            })
            .collect();
        assert!(m.iter().all(|r| r.len() == cols));
        out.push((head[0].to_string(), m));
    }
    out
}

fn write_matrix(out: &mut String, label: &str, m: &[Vec<f64>]) {
    out.push_str(&format!("{label} {} {}\n", m.len(), m[0].len()));
    for row in m {
        let row: Vec<String> = row.iter().map(|v| format!("{v:?}")).collect();
        out.push_str(&row.join(" "));
        out.push('\n');
    }
}

fn param<'a>(state: &'a [(String, Vec<usize>, Vec<f32>)], name: &str) -> &'a [f32] {
    &state.iter().find(|(n, _, _)| n == name).unwrap().2
}

/// The MLP in f64 from a state dict: the output and, from absolute values, the scale of f32
/// rounding in each output.
fn forward64(state: &[(String, Vec<usize>, Vec<f32>)], x: &[f64; 4]) -> ([f64; 3], [f64; 3]) {
    let (w0, b0, w2, b2) = (
        param(state, "0.weight"),
        param(state, "0.bias"),
        param(state, "2.weight"),
        param(state, "2.bias"),
    );
    let (mut h, mut habs) = ([0.0f64; 8], [0.0f64; 8]);
    for j in 0..8 {
        let (mut s, mut a) = (b0[j] as f64, (b0[j] as f64).abs());
        for k in 0..4 {
            s += w0[j * 4 + k] as f64 * x[k];
            a += (w0[j * 4 + k] as f64 * x[k]).abs();
        }
        h[j] = s.max(0.0);
        habs[j] = a;
    }
    let (mut y, mut yabs) = ([0.0f64; 3], [0.0f64; 3]);
    for i in 0..3 {
        let (mut s, mut a) = (b2[i] as f64, (b2[i] as f64).abs());
        for j in 0..8 {
            s += w2[i * 8 + j] as f64 * h[j];
            a += (w2[i * 8 + j] as f64).abs() * habs[j];
        }
        y[i] = s;
        yabs[i] = a;
    }
    (y, yabs)
}

fn predict(model: &Mlp<4, 8, 3>, x: &[[f32; 4]; 3]) -> Vec<f32> {
    model.detached().forward(Tensor::from(*x)).to_vec()
}

/// A safetensors file of `(name, dtype, dims, bytes)` entries, laid out in the given order,
/// written by hand from the format's definition (an 8-byte little-endian header length, a JSON
/// header, the data).
fn file_of(entries: &[(&str, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
    let mut header = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    for (name, dtype, dims, bytes) in entries {
        let (start, end) = (data.len(), data.len() + bytes.len());
        header.push(format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{dims:?},"data_offsets":[{start},{end}]}}"#
        ));
        data.extend(bytes);
    }
    let header = format!("{{{}}}", header.join(","));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    file.extend(data);
    file
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The file `good` with its header rewritten by `f`, and the header's length updated.
fn with_header(good: &[u8], f: impl FnOnce(&str) -> String) -> Vec<u8> {
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let header = f(std::str::from_utf8(&good[8..8 + n]).unwrap());
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    file.extend(&good[8 + n..]);
    file
}

/// The entries of a valid file for `Mlp<4, 8, 3>` with the values of `model`.
fn entries_of(model: &Mlp<4, 8, 3>) -> Vec<(String, &'static str, Vec<usize>, Vec<u8>)> {
    model
        .state_dict()
        .into_iter()
        .map(|(n, d, v)| (n, "F32", d, f32_bytes(&v)))
        .collect()
}

fn file_from(entries: &[(String, &str, Vec<usize>, Vec<u8>)]) -> Vec<u8> {
    let borrowed: Vec<(&str, &str, Vec<usize>, Vec<u8>)> = entries
        .iter()
        .map(|(n, d, s, b)| (n.as_str(), *d, s.clone(), b.clone()))
        .collect();
    file_of(&borrowed)
}

/// Asserts that loading `bytes` fails with a `Data` error at `location` whose message contains
/// `needle`, and that the model keeps its values.
fn assert_rejected(bytes: &[u8], location: &str, needle: &str) {
    let mut model = seeded_mlp(1);
    let before = model.state_dict();
    let err = nn::from_bytes(&mut model, bytes).unwrap_err();
    match &err {
        Error::Data { location: l, message } => {
            assert_eq!(l, location, "{err}");
            assert!(message.contains(needle), "message {message:?} lacks {needle:?}");
        }
        other => panic!("expected a Data error, got {other:?}"),
    }
    assert_eq!(model.state_dict(), before, "a failed load changed the model");
    // The same through a file: the location names the file.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let path = temp_path(&format!(
        "rejected-{}.safetensors",
        CALLS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).unwrap();
    let err = nn::load(&mut model, &path).unwrap_err();
    let Error::Data { location: l, .. } = &err else {
        panic!("expected a Data error, got {err:?}")
    };
    assert_eq!(
        *l,
        location.replacen("safetensors data", &path.display().to_string(), 1)
    );
    assert_eq!(model.state_dict(), before, "a failed load changed the model");
    std::fs::remove_file(&path).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Interop with the numpy-written fixture

#[test]
fn numpy_fixture_loads_into_mlp_and_matches_numpy_forward() {
    let mut model = seeded_mlp(0);
    nn::load(&mut model, fixtures().join("mlp_4_8_3.safetensors")).unwrap();

    // The values are the script's arange formulas, rounded to f32.
    let state = model.state_dict();
    let formula = |n: usize, mul: usize, modulo: usize, sub: f64, div: f64| -> Vec<f32> {
        (0..n)
            .map(|i| (((i * mul % modulo) as f64 - sub) / div) as f32)
            .collect()
    };
    assert_eq!(param(&state, "0.weight"), formula(32, 7, 11, 5.0, 10.0));
    assert_eq!(param(&state, "0.bias"), formula(8, 1, usize::MAX, 4.0, 20.0));
    assert_eq!(param(&state, "2.weight"), formula(24, 5, 13, 6.0, 10.0));
    assert_eq!(param(&state, "2.bias"), formula(3, 1, usize::MAX, 1.0, 10.0));

    let text = std::fs::read_to_string(fixtures().join("mlp_4_8_3_expected.txt")).unwrap();
    let m = read_matrices(&text);
    let (input, expected) = (&m[0].1, &m[1].1);
    assert_eq!((m[0].0.as_str(), m[1].0.as_str()), ("input", "output"));
    let x: [[f32; 4]; 3] = std::array::from_fn(|r| std::array::from_fn(|c| input[r][c] as f32));
    assert!(
        (0..3).all(|r| (0..4).all(|c| x[r][c] as f64 == input[r][c])),
        "the input is f32-exact"
    );
    let y = predict(&model, &x);
    for r in 0..3 {
        let (ours64, scale) = forward64(&state, &input[r].clone().try_into().unwrap());
        for c in 0..3 {
            // Our own f64 loop agrees with numpy's f64 result to f64 rounding.
            assert!(
                (ours64[c] - expected[r][c]).abs() < 1e-12,
                "f64 reference vs numpy at [{r}][{c}]"
            );
            // In f32 each output sums at most 9 rounded products per layer over 2 layers: the error
            // is below ~(5 + 9)·u·Σ|terms| with u = ε/2; 16ε·Σ|terms| bounds it with room to spare.
            let bound = 16.0 * f32::EPSILON as f64 * scale[c];
            let err = (y[r * 3 + c] as f64 - expected[r][c]).abs();
            assert!(
                err <= bound,
                "[{r}][{c}]: {} vs numpy {} (err {err:e} > {bound:e})",
                y[r * 3 + c],
                expected[r][c]
            );
        }
    }
}

#[test]
fn save_then_load_round_trips_values_and_predictions_exactly() {
    let trained = seeded_mlp(7);
    let path = temp_path("round-trip.safetensors");
    nn::save(&trained, &path).unwrap();
    let mut fresh = seeded_mlp(8);
    assert_ne!(fresh.state_dict(), trained.state_dict());
    nn::load(&mut fresh, &path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let bits = |s: Vec<(String, Vec<usize>, Vec<f32>)>| -> Vec<(String, Vec<usize>, Vec<u32>)> {
        s.into_iter()
            .map(|(n, d, v)| (n, d, v.iter().map(|x| x.to_bits()).collect()))
            .collect()
    };
    assert_eq!(bits(fresh.state_dict()), bits(trained.state_dict()));
    let x = [
        [0.5, -1.0, 2.0, 0.25],
        [1.0, 1.0, 1.0, 1.0],
        [-3.0, 0.0, 0.125, 7.0],
    ];
    let (a, b) = (predict(&trained, &x), predict(&fresh, &x));
    assert_eq!(
        a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );

    // Bytes, too, and special values survive.
    let mut special = seeded_mlp(9);
    let mut state = special.state_dict();
    state[0].2[..4].copy_from_slice(&[f32::INFINITY, f32::NEG_INFINITY, -0.0, f32::MIN_POSITIVE / 8.0]);
    special.load_state_dict(&state).unwrap();
    let mut back = seeded_mlp(10);
    nn::from_bytes(&mut back, &nn::to_bytes(&special).unwrap()).unwrap();
    assert_eq!(bits(back.state_dict()), bits(special.state_dict()));
}

#[test]
fn written_file_is_f32_little_endian_by_name_with_dims() {
    let model = seeded_mlp(3);
    let bytes = nn::to_bytes(&model).unwrap();
    // Spelled out from the format: tensors in name order, each `F32` with its dims and byte
    // range, the header padded with spaces to a multiple of 8 so the data is aligned.
    let mut state = model.state_dict();
    state.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = state.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(names, ["0.bias", "0.weight", "2.bias", "2.weight"]);
    let mut header = String::from(
        r#"{"0.bias":{"dtype":"F32","shape":[8],"data_offsets":[0,32]},"0.weight":{"dtype":"F32","shape":[8,4],"data_offsets":[32,160]},"2.bias":{"dtype":"F32","shape":[3],"data_offsets":[160,172]},"2.weight":{"dtype":"F32","shape":[3,8],"data_offsets":[172,268]}}"#,
    );
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut expected = (header.len() as u64).to_le_bytes().to_vec();
    expected.extend(header.as_bytes());
    for (_, _, values) in &state {
        expected.extend(f32_bytes(values));
    }
    assert_eq!(bytes, expected);
}

/// A model of one parameter under a chosen name.
struct Named(&'static str, Tensor<Rank1<2>, Tracked>);

impl Params for Named {
    fn visit(&self, _: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        f(self.0, &self.1);
    }
    fn visit_mut(&mut self, _: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        f(self.0, &mut self.1);
    }
}

/// Names are JSON strings: quotes, backslashes and control characters are escaped, and the
/// file loads back under the same names.
#[test]
fn names_needing_escapes_round_trip() {
    const NAME: &str = "a \"q\" \\ \n é";
    let a = Named(NAME, Tensor::from([1.0, 2.0]).requires_grad());
    let bytes = nn::to_bytes(&a).unwrap();
    let quoted = r#""a \"q\" \\ \u000a é""#;
    assert!(String::from_utf8_lossy(&bytes).contains(quoted), "{bytes:?}");
    let mut b = Named(NAME, Tensor::from([0.0, 0.0]).requires_grad());
    nn::from_bytes(&mut b, &bytes).unwrap();
    assert_eq!(b.state_dict(), a.state_dict());
}

#[test]
fn a_model_without_parameters_round_trips() {
    let bytes = nn::to_bytes(&nn::Relu).unwrap();
    nn::from_bytes(&mut nn::Relu, &bytes).unwrap();
    // ...but a file with tensors is extra for it.
    let err = nn::from_bytes(&mut nn::Relu, &nn::to_bytes(&seeded_mlp(0)).unwrap()).unwrap_err();
    assert!(matches!(err, Error::Data { .. }), "{err:?}");
}

#[test]
fn linear_without_bias_has_only_a_weight() {
    let layer = Linear::<3, 2>::without_bias(&mut StdRng::seed_from_u64(0));
    let bytes = nn::to_bytes(&layer).unwrap();
    let mut with_bias = Linear::<3, 2>::init(&mut StdRng::seed_from_u64(1));
    let before = with_bias.state_dict();
    let err = nn::from_bytes(&mut with_bias, &bytes).unwrap_err();
    assert_eq!(
        err.to_string(),
        "safetensors data: tensor bias: is missing from the file"
    );
    assert_eq!(with_bias.state_dict(), before);
    let mut other = Linear::<3, 2>::without_bias(&mut StdRng::seed_from_u64(2));
    nn::from_bytes(&mut other, &bytes).unwrap();
    assert_eq!(other.state_dict(), layer.state_dict());
}

// ---------------------------------------------------------------------------------------------
// Bad files: a clear error and the model untouched

#[test]
fn missing_tensor_is_rejected() {
    let mut entries = entries_of(&seeded_mlp(5));
    entries.retain(|(n, ..)| n != "2.bias");
    assert_rejected(&file_from(&entries), "safetensors data: tensor 2.bias", "missing");
}

/// A missing tensor's error names what the file holds instead, and a prefix on every name.
#[test]
fn missing_tensor_names_what_the_file_has_instead() {
    let mut entries = entries_of(&seeded_mlp(5));
    for (name, ..) in entries.iter_mut().filter(|(n, ..)| n.starts_with("2.")) {
        name.push('_');
    }
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 2.weight",
        "missing from the file, whose other tensors are \"2.bias_\", \"2.weight_\"",
    );
    let mut entries = entries_of(&seeded_mlp(5));
    for (name, ..) in &mut entries {
        name.insert_str(0, "model.");
    }
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 0.weight",
        "missing from the file, which has \"model.0.weight\": to load names saved with a prefix, \
         read them with `nn::read_tensors`",
    );
    // The model's own names are not "other tensors", nor taken for a prefixed one: a nested
    // layer's `1.0.weight` ends with the missing `0.weight`.
    let mut nested = (Linear::<2, 3>::init(&mut StdRng::seed_from_u64(2)), seeded_mlp(3));
    let entries: Vec<_> = (nested.state_dict().into_iter())
        .filter(|(n, ..)| n != "0.weight")
        .map(|(n, d, v)| (n, "F32", d, f32_bytes(&v)))
        .collect();
    let err = nn::from_bytes(&mut nested, &file_from(&entries))
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("tensor 0.weight: is missing from the file"),
        "{err}"
    );
    // Past four names, a count.
    let names: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
    let entries: Vec<_> = names
        .iter()
        .map(|n| (n.clone(), "F32", vec![1], vec![0; 4]))
        .collect();
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 0.weight",
        "whose other tensors are \"t0\", \"t1\", \"t2\", \"t3\" and 3 more",
    );
}

/// A prefixed file is read whole, renamed and loaded, as the prefix error says.
#[test]
fn read_tensors_lists_a_file_for_renaming() {
    let saved = seeded_mlp(6);
    let mut entries = entries_of(&saved);
    for (name, ..) in &mut entries {
        name.insert_str(0, "model.");
    }
    entries.reverse();
    let bytes = file_from(&entries);
    let tensors = nn::parse_tensors(&bytes).unwrap();
    let names: Vec<&str> = tensors.iter().map(|t| t.0.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    let path = temp_path("prefixed.safetensors");
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(nn::read_tensors(&path).unwrap(), tensors);
    std::fs::remove_file(&path).unwrap();
    let renamed: Vec<_> = (tensors.into_iter())
        .map(|(n, d, v)| (n.strip_prefix("model.").unwrap().to_string(), d, v))
        .collect();
    let mut model = seeded_mlp(7);
    model.load_state_dict(&renamed).unwrap();
    assert_eq!(model.state_dict(), saved.state_dict());
    // What it cannot read is an error, never a panic: another dtype, a truncated file, a
    // missing one.
    let mut entries = entries_of(&saved);
    entries[0].1 = "F64";
    entries[0].3 = vec![0u8; entries[0].3.len() * 2];
    let err = nn::parse_tensors(&file_from(&entries)).unwrap_err();
    assert!(
        err.to_string().contains("has dtype F64, but only F32 is read"),
        "{err}"
    );
    // Of several tensors in error, the first by name, every time (not the hash map's pick).
    let two = file_of(&[
        ("b", "I64", vec![1], vec![0; 8]),
        ("a", "I64", vec![1], vec![0; 8]),
    ]);
    for _ in 0..16 {
        let err = nn::parse_tensors(&two).unwrap_err().to_string();
        assert!(
            err.starts_with("safetensors data: tensor a: has dtype I64"),
            "{err}"
        );
    }
    for cut in [0, 7, 8, 20, bytes.len() - 1] {
        assert!(
            matches!(nn::parse_tensors(&bytes[..cut]), Err(Error::Data { .. })),
            "cut at {cut}"
        );
    }
    let err = nn::read_tensors(temp_path("never-written.safetensors")).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
}

#[test]
fn a_bare_tensor_round_trips_and_its_error_says_it_is_unnamed() {
    let t = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).requires_grad();
    let bytes = nn::to_bytes(&t).unwrap();
    let mut same = Tensor::<Rank2<2, 3>>::zeros().requires_grad();
    nn::from_bytes(&mut same, &bytes).unwrap();
    assert_eq!(same.to_array(), t.to_array());
    let mut other = Tensor::<Rank2<3, 2>>::zeros().requires_grad();
    let err = nn::from_bytes(&mut other, &bytes).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("safetensors data: tensor \"\" (unnamed): has shape [2, 3]"),
        "{err}"
    );
}

#[test]
fn wrong_shape_is_rejected() {
    let mut entries = entries_of(&seeded_mlp(5));
    // The same 32 values as [4, 8] (transposed layout) instead of [8, 4].
    entries.iter_mut().find(|(n, ..)| n == "0.weight").unwrap().2 = vec![4, 8];
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 0.weight",
        "shape [4, 8]",
    );
    // Flattened, with the right element count.
    entries.iter_mut().find(|(n, ..)| n == "0.weight").unwrap().2 = vec![32];
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 0.weight",
        "shape [32]",
    );
}

#[test]
fn wrong_dtype_is_rejected() {
    for (dtype, size, name) in [
        ("F64", 8, "F64"),
        ("F16", 2, "F16"),
        ("I64", 8, "I64"),
        ("BF16", 2, "BF16"),
    ] {
        let mut entries = entries_of(&seeded_mlp(5));
        let e = entries.iter_mut().find(|(n, ..)| n == "0.bias").unwrap();
        e.1 = dtype;
        e.3 = vec![0u8; 8 * size];
        assert_rejected(&file_from(&entries), "safetensors data: tensor 0.bias", name);
    }
}

#[test]
fn extra_tensor_is_rejected() {
    let mut entries = entries_of(&seeded_mlp(5));
    entries.push(("4.weight".into(), "F32", vec![2], f32_bytes(&[1.0, 2.0])));
    assert_rejected(
        &file_from(&entries),
        "safetensors data: tensor 4.weight",
        "not a parameter",
    );
}

#[test]
fn corrupt_or_truncated_files_are_rejected() {
    let good = nn::to_bytes(&seeded_mlp(5)).unwrap();
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    // Truncated: in the data, in the header, in the length prefix, empty.
    for cut in [good.len() - 1, good.len() - 200, 8 + n / 2, 8, 5, 0] {
        assert_rejected(&good[..cut], "safetensors data", "not a valid safetensors file");
    }
    // One byte too many.
    let mut longer = good.clone();
    longer.push(0);
    assert_rejected(&longer, "safetensors data", "not a valid safetensors file");
    // Garbage JSON, non-UTF-8, a header length beyond the file, an absurd header length.
    let mut garbage = good.clone();
    garbage[8..16].copy_from_slice(b"not json");
    assert_rejected(&garbage, "safetensors data", "not a valid safetensors file");
    let mut non_utf8 = good.clone();
    non_utf8[9] = 0xff;
    assert_rejected(&non_utf8, "safetensors data", "not a valid safetensors file");
    for len in [good.len() as u64, u64::MAX, 1 << 40] {
        let mut bad_len = good.clone();
        bad_len[..8].copy_from_slice(&len.to_le_bytes());
        assert_rejected(&bad_len, "safetensors data", "not a valid safetensors file");
    }
    // Offsets that disagree with the shape.
    let header = std::str::from_utf8(&good[8..8 + n]).unwrap();
    let bad_offsets = header.replacen("[0,32]", "[0,28]", 1);
    assert_ne!(
        bad_offsets, header,
        "the first tensor is 0.bias with 8 values: {header}"
    );
    let mut file = good[..8].to_vec();
    file.extend(bad_offsets.as_bytes());
    file.extend(&good[8 + n..]);
    assert_rejected(&file, "safetensors data", "not a valid safetensors file");
    // A field given twice in one tensor's entry, or `__metadata__` twice, as the reference
    // reader rejects them (a tensor name given twice is read as its last entry, as there).
    for (from, to, needle) in [
        (
            "\"data_offsets\":[0,32]",
            "\"data_offsets\":[0,0],\"data_offsets\":[0,32]",
            "`data_offsets` appears",
        ),
        (
            "{",
            "{\"__metadata__\":null,\"__metadata__\":null,",
            "`__metadata__` appears",
        ),
    ] {
        assert!(header.contains(from));
        let file = with_header(&good, |header| header.replacen(from, to, 1));
        assert_rejected(&file, "safetensors data", needle);
    }
}

/// A tensor's entry with 300,000 fields besides its own three: they are ignored, and checking
/// them for repeats takes one pass (a pairwise check would take about 4.5e10 comparisons).
#[test]
fn an_entry_of_many_fields_loads() {
    let model = seeded_mlp(5);
    let good = nn::to_bytes(&model).unwrap();
    let extra: String = (0..300_000).map(|k| format!("\"k{k}\":0,")).collect();
    let file = with_header(&good, |header| {
        assert!(header.contains("{\"dtype\""));
        header.replacen("{\"dtype\"", &format!("{{{extra}\"dtype\""), 1)
    });
    let mut loaded = seeded_mlp(6);
    nn::from_bytes(&mut loaded, &file).unwrap();
    assert_eq!(loaded.state_dict(), model.state_dict());
}

#[test]
fn offsets_summing_to_overflow_are_an_error_not_a_panic() {
    // Contiguous offsets whose sum is 2^64 - 8: adding the sizes up unchecked would overflow
    // (the safetensors crate 0.8.0 panics on this in builds with overflow checks).
    let size = (1u64 << 61) - 1;
    let mut header = String::from("{");
    for i in 0..8u64 {
        let sep = if i == 0 { "" } else { "," };
        header += &format!(
            r#"{sep}"t{i}":{{"dtype":"U8","shape":[{size}],"data_offsets":[{},{}]}}"#,
            i * size,
            (i + 1) * size
        );
    }
    header.push('}');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    assert_rejected(&file, "safetensors data", "past the end of the file");
}

#[test]
fn io_errors_name_the_path() {
    let mut model = seeded_mlp(0);
    let before = model.state_dict();
    let missing = temp_path("does-not-exist.safetensors");
    let err = nn::load(&mut model, &missing).unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if *path == missing.display().to_string()),
        "{err:?}"
    );
    assert_eq!(model.state_dict(), before);
    let unwritable = temp_path("no-such-dir").join("x.safetensors");
    let err = nn::save(&model, &unwritable).unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if *path == unwritable.display().to_string()),
        "{err:?}"
    );
}

/// Two parameters under one name can be neither written (a file could not hold both) nor
/// loaded (a file's one tensor of that name could not say which it is for), and a failed load
/// leaves both as they were.
#[test]
fn duplicate_parameter_names_are_an_error_on_save_and_load() {
    struct Twice(Tensor<Rank1<2>, Tracked>, Tensor<Rank1<2>, Tracked>);
    impl Params for Twice {
        fn visit(&self, _: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
            f("w", &self.0);
            f("w", &self.1);
        }
        fn visit_mut(&mut self, _: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
            f("w", &mut self.0);
            f("w", &mut self.1);
        }
    }
    let twice = Twice(
        Tensor::from([1.0, 2.0]).requires_grad(),
        Tensor::from([3.0, 4.0]).requires_grad(),
    );
    let repeated = "w: two parameters of this module have this name, so saved state cannot tell them apart";
    let err = nn::to_bytes(&twice).unwrap_err();
    assert_eq!(err.to_string(), format!("safetensors data: tensor {repeated}"));
    let mut twice = twice;
    let one = nn::to_bytes(&(Tensor::from([9.0, 9.0]),)).unwrap();
    let one = one_renamed(&one, "0", "w");
    let err = nn::from_bytes(&mut twice, &one).unwrap_err();
    assert_eq!(err.to_string(), format!("safetensors data: tensor {repeated}"));
    let err = twice
        .load_state_dict(&[("w".into(), vec![2], vec![7.0, 7.0])])
        .unwrap_err();
    assert_eq!(err.to_string(), repeated);
    assert_eq!(
        (twice.0.to_vec(), twice.1.to_vec()),
        (vec![1.0, 2.0], vec![3.0, 4.0])
    );
}

/// `bytes` of a file with one tensor named `from`, that tensor named `to` (as long a name).
fn one_renamed(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = std::str::from_utf8(&bytes[8..header_end]).unwrap();
    let renamed = header.replacen(&format!("{from:?}"), &format!("{to:?}"), 1);
    [&bytes[..8], renamed.as_bytes(), &bytes[header_end..]].concat()
}

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes

/// A few thousand random and mutated byte strings: `from_bytes` returns (never panics), leaves
/// the model untouched when it errs, and allocates no more than a small multiple of the input.
#[test]
fn arbitrary_bytes_never_panic_or_overallocate() {
    let mut rng = StdRng::seed_from_u64(0x5afe);
    let good = nn::to_bytes(&seeded_mlp(5)).unwrap();
    let n = u64::from_le_bytes(good[..8].try_into().unwrap()) as usize;
    let mut model = seeded_mlp(1);
    let before = model.state_dict();
    let (mut oks, mut errs, mut worst) = (0, 0, (0usize, 0usize, 0usize));
    for case in 0..4000 {
        let bytes: Vec<u8> = match case % 8 {
            // Random bytes.
            0 => (0..rng.random_range(0..700)).map(|_| rng.random()).collect(),
            // Random bytes behind a plausible length prefix.
            1 => {
                let len = rng.random_range(0..600usize);
                let mut b = (rng.random_range(0..len as u64 + 8)).to_le_bytes().to_vec();
                b.extend((0..len).map(|_| rng.random::<u8>()));
                b
            }
            // A valid file with a few bytes flipped anywhere.
            2 => {
                let mut b = good.clone();
                for _ in 0..rng.random_range(1..6) {
                    let i = rng.random_range(0..b.len());
                    b[i] ^= 1 << rng.random_range(0..8);
                }
                b
            }
            // A valid file with header bytes replaced by JSON-ish characters.
            3 => {
                let mut b = good.clone();
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(8..8 + n);
                    b[i] = b"0123456789{}[]\",:-e.\\ "[rng.random_range(0..22)];
                }
                b
            }
            // A valid file's header with a number changed to a random (often huge) one.
            4 => {
                let header = std::str::from_utf8(&good[8..8 + n]).unwrap();
                let digits: Vec<usize> = header
                    .match_indices(|c: char| c.is_ascii_digit())
                    .map(|(i, _)| i)
                    .collect();
                let at = digits[rng.random_range(0..digits.len())];
                let number = match rng.random_range(0..3) {
                    0 => rng.random::<u64>().to_string(),
                    1 => rng.random_range(0..400u32).to_string(),
                    _ => "9".repeat(rng.random_range(1..40)),
                };
                with_header(&good, |header| {
                    format!("{}{number}{}", &header[..at], &header[at + 1..])
                })
            }
            // Truncated, or extended with junk.
            5 => {
                let mut b = good[..rng.random_range(0..good.len())].to_vec();
                if rng.random() {
                    b.extend((0..rng.random_range(0..64)).map(|_| rng.random::<u8>()));
                }
                b
            }
            // A mutated length prefix.
            6 => {
                let mut b = good.clone();
                let len = match rng.random_range(0..3) {
                    0 => rng.random::<u64>(),
                    1 => (n as u64).wrapping_add(rng.random_range(0..16)).wrapping_sub(8),
                    _ => rng.random_range(0..good.len() as u64 * 2),
                };
                b[..8].copy_from_slice(&len.to_le_bytes());
                b
            }
            // Unmodified (every 8th case succeeds).
            _ => good.clone(),
        };
        let (result, largest, peak) = measure(|| nn::from_bytes(&mut model, &bytes));
        // A bound generous for serde's maps and strings (a few times the header) and the decoded
        // values (at most the data's size), and far below any allocation sized by a declared
        // shape or offset.
        let allowed = 8 * bytes.len() + 4096;
        assert!(
            largest <= allowed && peak <= allowed,
            "case {case}: {largest}/{peak} bytes for {} input bytes",
            bytes.len()
        );
        worst = worst.max((largest, peak, bytes.len()));
        match result {
            Ok(()) => {
                oks += 1;
                // A mutation may keep the file valid (a flipped mantissa bit); load the known
                // values back for the next case.
                nn::from_bytes(&mut model, &nn::to_bytes(&seeded_mlp(1)).unwrap()).unwrap();
            }
            Err(e) => {
                errs += 1;
                assert!(matches!(e, Error::Data { .. }), "case {case}: {e:?}");
                assert_eq!(
                    model.state_dict(),
                    before,
                    "case {case}: a failed load changed the model"
                );
            }
        }
    }
    assert!(oks >= 500 && errs >= 2000, "{oks} ok, {errs} errors");
    println!("{oks} ok, {errs} errors; worst (largest, peak, input) = {worst:?}");
}

// ---------------------------------------------------------------------------------------------
// For the Python side

/// With `TEENYGRAD_INTEROP_DIR` set, writes `ours.safetensors` (a seeded `Mlp<4, 8, 3>`) and
/// `ours_expected.txt` (an input and our forward output) there, for
/// `make_safetensors_fixture.py check`. Without it, does nothing.
#[test]
fn interop_export() {
    let Some(dir) = std::env::var_os("TEENYGRAD_INTEROP_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let model = seeded_mlp(2024);
    nn::save(&model, dir.join("ours.safetensors")).unwrap();
    let x = [
        [0.5, -1.0, 2.0, 0.25],
        [1.0, 1.0, 1.0, 1.0],
        [-3.0, 0.0, 0.125, 7.0],
    ];
    let y = predict(&model, &x);
    let mut text = String::from("# Written by teenygrad's tests/safetensors.rs interop_export.\n");
    write_matrix(&mut text, "input", &x.map(|r| r.map(f64::from).to_vec()));
    write_matrix(
        &mut text,
        "output",
        &y.chunks(3)
            .map(|r| r.iter().map(|&v| v as f64).collect())
            .collect::<Vec<_>>(),
    );
    std::fs::write(dir.join("ours_expected.txt"), text).unwrap();
}

/// `__metadata__` is the format's reserved key: a parameter of that name cannot be written, and a
/// file whose metadata is `null` (the reference implementation reads it as optional) loads.
#[test]
fn the_metadata_key_is_reserved_and_may_be_null() {
    let reserved = Named("__metadata__", Tensor::from([1.0, 2.0]).requires_grad());
    let err = nn::to_bytes(&reserved).unwrap_err();
    assert!(err.to_string().contains("reserves this name"), "{err}");

    let source = seeded_mlp(4);
    let good = nn::to_bytes(&source).unwrap();
    let file = with_header(&good, |header| {
        format!("{{\"__metadata__\":null,{}", &header.trim_end()[1..])
    });
    let mut model = seeded_mlp(5);
    nn::from_bytes(&mut model, &file).unwrap();
    assert_eq!(model.state_dict(), source.state_dict());
}

/// An entry with a 0 among dims that otherwise overflow is refused wherever the 0 is (it had
/// been read as empty with the 0 first and refused with the 0 last), as such a shape is.
#[test]
fn an_entry_with_a_zero_among_overflowing_dims_is_refused_in_any_order() {
    for shape in [format!("[{},2,0]", usize::MAX), format!("[0,{},2]", usize::MAX)] {
        let header = format!(r#"{{"t":{{"dtype":"F32","shape":{shape},"data_offsets":[0,0]}}}}"#);
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend(header.as_bytes());
        assert_rejected(&file, "safetensors data", "overflow");
    }
    let header = format!(
        r#"{{"t":{{"dtype":"F32","shape":[0,{}],"data_offsets":[0,0]}}}}"#,
        usize::MAX
    );
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header.as_bytes());
    assert!(nn::parse_tensors(&file).unwrap()[0].2.is_empty());
}
