//! The `nn` module: Linear's initialization and forward pass against hand computation, `Detach`,
//! parameter names and counts as PyTorch's `nn.Sequential` gives them, state dicts.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::nn::{
    Detach, Gelu, GeluTanh, Init, LayerNorm, Linear, Mlp, Module, Params, Relu, Sigmoid, Tanh,
};
use teenygrad::prelude::*;

const EPS: f64 = f32::EPSILON as f64;

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// `x·Wᵀ + b` in f64, and the sum of absolute terms per output (the scale of f32 rounding).
fn linear64(x: &[f32], w: &[f32], b: Option<&[f32]>, i: usize, o: usize) -> (Vec<f64>, Vec<f64>) {
    let rows = x.len() / i;
    let (mut y, mut scale) = (Vec::new(), Vec::new());
    for r in 0..rows {
        for k in 0..o {
            let bias = b.map_or(0.0, |b| b[k] as f64);
            let (mut s, mut a) = (bias, bias.abs());
            for j in 0..i {
                let t = x[r * i + j] as f64 * w[k * i + j] as f64;
                s += t;
                a += t.abs();
            }
            y.push(s);
            scale.push(a);
        }
    }
    (y, scale)
}

fn assert_linear_output(got: &[f32], want: &(Vec<f64>, Vec<f64>), terms: usize) {
    assert_eq!(got.len(), want.0.len());
    for (idx, (&g, (&w, &s))) in got.iter().zip(want.0.iter().zip(&want.1)).enumerate() {
        // A dot product of `terms` products plus the bias, in f32 in any order: |error| ≤
        // γ_(terms+1)·Σ|terms| with γ_n ≈ n·u = n·ε/2.
        let tol = (terms as f64 + 2.0) * EPS * s + 1e-30;
        assert!((g as f64 - w).abs() <= tol, "[{idx}]: {g} vs {w} (tol {tol:e})");
    }
}

// ---------------------------------------------------------------------------------------------
// Linear

#[test]
fn linear_init_is_uniform_within_pytorch_bound() {
    let layer = Linear::<64, 128>::init(&mut rng(0));
    let bound = 1.0 / 64f32.sqrt();
    let w = layer.weight.to_vec();
    let b = layer.bias.as_ref().unwrap().to_vec();
    assert_eq!((w.len(), b.len()), (128 * 64, 128));
    assert!(w.iter().chain(&b).all(|v| v.abs() <= bound), "all within ±1/√I");
    // Uniform on [-b, b]: mean 0 and variance b²/3; over 8192 samples the mean's standard error
    // is b/√(3·8192) ≈ 0.0064·b, so 5 standard errors is 0.032·b.
    let n = w.len() as f64;
    let mean = w.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = w.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let bound = bound as f64;
    assert!(mean.abs() < 0.032 * bound, "mean {mean}");
    assert!((var / (bound * bound / 3.0) - 1.0).abs() < 0.05, "variance {var}");
    // It fills the interval: each tenth of it holds about a tenth of the samples.
    let mut bins = [0usize; 10];
    for &v in &w {
        bins[(((v as f64 + bound) / (2.0 * bound) * 10.0) as usize).min(9)] += 1;
    }
    assert!(bins.iter().all(|&c| (700..=940).contains(&c)), "{bins:?}");
    // The bias's bound is also 1/√I (PyTorch: 1/√fan_in), not 1/√O.
    let small = Linear::<4, 100>::init(&mut rng(1));
    let b = small.bias.unwrap().to_vec();
    assert!(
        b.iter().all(|v| v.abs() <= 0.5) && b.iter().any(|v| v.abs() > 0.3),
        "{b:?}"
    );
}

#[test]
fn linear_with_no_inputs_has_a_zero_bias() {
    // PyTorch's bound 1/√fan_in is 0 for no inputs (`bound = 1 / sqrt(fan_in) if fan_in > 0
    // else 0`): the bias is zeros and the output is the bias.
    let layer = Linear::<0, 3>::init(&mut rng(0));
    assert_eq!(layer.bias.as_ref().unwrap().to_vec(), [0.0; 3]);
    assert_eq!(layer.forward(Tensor::<Rank2<2, 0>>::zeros()).to_vec(), [0.0; 6]);
}

#[test]
fn linear_init_is_deterministic_for_a_seed() {
    let a = Linear::<5, 3>::init(&mut rng(42));
    let b = Linear::<5, 3>::init(&mut rng(42));
    let c = Linear::<5, 3>::init(&mut rng(43));
    let flat = |l: &Linear<5, 3>| -> Vec<u32> {
        l.state_dict()
            .into_iter()
            .flat_map(|(_, _, v)| bits(&v))
            .collect()
    };
    assert_eq!(flat(&a), flat(&b));
    assert_ne!(flat(&a), flat(&c));
    // Tuples draw from the one RNG in order: the same seed gives the same model.
    let m1 = Mlp::<4, 8, 3>::init(&mut rng(7));
    let m2 = Mlp::<4, 8, 3>::init(&mut rng(7));
    assert_eq!(m1.state_dict(), m2.state_dict());
    assert_ne!(
        m1.0.weight.to_vec()[..24],
        m1.2.weight.to_vec()[..24],
        "layers differ"
    );
}

#[test]
fn linear_forward_is_x_wt_plus_b() {
    let layer = Linear::<5, 3>::init(&mut rng(3));
    let (w, b) = (layer.weight.to_vec(), layer.bias.as_ref().unwrap().to_vec());
    let x: [[f32; 5]; 4] = [
        [1.0, -2.0, 0.5, 3.0, 0.25],
        [0.0, 0.0, 0.0, 0.0, 0.0],
        [-1.5, 2.5, 1.0, -0.75, 4.0],
        [0.1, 0.2, 0.3, 0.4, 0.5],
    ];
    let flat: Vec<f32> = x.iter().flatten().copied().collect();
    let want = linear64(&flat, &w, Some(&b), 5, 3);
    // A static batch.
    let y: Tensor<Rank2<4, 3>, Tracked> = layer.forward(Tensor::from(x));
    assert_linear_output(&y.to_vec(), &want, 5);
    // A run-time batch.
    let y = layer.forward(Tensor::from_vec(flat.clone(), (4usize, Const::<5>)).unwrap());
    assert_eq!(y.dims(), vec![4, 3]);
    assert_linear_output(&y.to_vec(), &want, 5);
    // A single vector.
    let y: Tensor<Rank1<3>, Tracked> = layer.forward(Tensor::from(x[2]));
    assert_linear_output(&y.to_vec(), &linear64(&flat[10..15], &w, Some(&b), 5, 3), 5);
    // A zero input gives the bias.
    assert_eq!(bits(&layer.forward(Tensor::from(x)).to_vec()[3..6]), bits(&b));
    // A batch of sequences: every position as a row, the same values (statically and at run time).
    let seq: Tensor<Rank3<2, 2, 3>, Tracked> =
        layer.forward(Tensor::<Rank3<2, 2, 5>>::from_vec(flat.clone(), Default::default()).unwrap());
    assert_linear_output(&seq.to_vec(), &want, 5);
    let seq = layer.forward(Tensor::from_vec(flat.clone(), (1usize, 4usize, Const::<5>)).unwrap());
    assert_eq!(seq.dims(), vec![1, 4, 3]);
    assert_linear_output(&seq.to_vec(), &want, 5);
}

#[test]
fn linear_without_bias() {
    let layer = Linear::<3, 2>::without_bias(&mut rng(4));
    assert!(layer.bias.is_none());
    assert_eq!(layer.named_dims(), vec![("weight".to_string(), vec![2, 3])]);
    let x = [[1.0, 2.0, -3.0]];
    let want = linear64(&[1.0, 2.0, -3.0], &layer.weight.to_vec(), None, 3, 2);
    assert_linear_output(&layer.forward(Tensor::from(x)).to_vec(), &want, 3);
    assert_eq!(layer.parameter_count(), 6);
}

#[test]
fn linear_gradients_are_hand_derived() {
    // loss = Σ (x·Wᵀ + b): dW[k][j] = Σ_r x[r][j], db[k] = rows.
    let layer = Linear::<3, 2>::init(&mut rng(5));
    let x = [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]];
    let grads = |layer: &Linear<3, 2>| {
        let bias = layer.bias.as_ref().unwrap().grad().unwrap().to_array();
        (layer.weight.grad().unwrap().to_array(), bias)
    };
    let want = ([[0.0, 2.5, 7.0], [0.0, 2.5, 7.0]], [2.0, 2.0]);
    layer.forward(Tensor::from(x)).sum_all().backward();
    assert_eq!(grads(&layer), want);
    layer.zero_grad();
    assert!(layer.weight.grad().is_none() && layer.bias.as_ref().unwrap().grad().is_none());
    // The same rows as a [1, 2, 3] sequence: the same gradients.
    layer.forward(Tensor::from([x])).sum_all().backward();
    assert_eq!(grads(&layer), want);
}

// ---------------------------------------------------------------------------------------------
// Detach

#[test]
fn detach_gives_an_untracked_model_with_identical_outputs() {
    let model = Mlp::<4, 8, 3>::init(&mut rng(6));
    let detached = model.detached();
    let x = Tensor::from([[0.5, -1.0, 2.0, 0.25], [1.0, 1.0, 1.0, 1.0]]);
    let tracked: Tensor<Rank2<2, 3>, Tracked> = model.forward(x.clone());
    let untracked: Tensor<Rank2<2, 3>, NoGrad> = detached.forward(x);
    assert_eq!(bits(&tracked.to_vec()), bits(&untracked.to_vec()));
    assert_eq!(detached.state_dict(), model.state_dict());
    assert_eq!(detached.named_dims(), model.named_dims());
    // The untracked layer type, spelled out.
    let _: &Linear<4, 8, NoGrad> = &detached.0;
    // Running the detached model leaves no gradient on the original.
    let _ = detached
        .forward(Tensor::from([[1.0, 2.0, 3.0, 4.0]]))
        .sum_all()
        .item();
    assert!(model.0.weight.grad().is_none());
}

// ---------------------------------------------------------------------------------------------
// Names, dims, counts, state dicts

#[test]
fn mlp_parameters_are_named_as_pytorch_sequential() {
    let model = Mlp::<64, 128, 10>::init(&mut rng(0));
    let names = model.named_dims();
    assert_eq!(
        names,
        vec![
            ("0.weight".to_string(), vec![128, 64]),
            ("0.bias".to_string(), vec![128]),
            ("2.weight".to_string(), vec![10, 128]),
            ("2.bias".to_string(), vec![10]),
        ]
    );
    assert_eq!(model.parameter_count(), 64 * 128 + 128 + 128 * 10 + 10);
    assert_eq!(model.parameter_count(), 9610);
    // Deeper and nested tuples: indices by position, dotted for nesting.
    let deep = <(Linear<4, 8>, Tanh, Linear<8, 8>, Sigmoid, Linear<8, 2>)>::init(&mut rng(1));
    let deep_names: Vec<String> = deep.named_dims().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        deep_names,
        ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    );
    let nested = <((Linear<2, 3>, Relu), Linear<3, 1>)>::init(&mut rng(2));
    let nested_names: Vec<String> = nested.named_dims().into_iter().map(|(n, _)| n).collect();
    assert_eq!(nested_names, ["0.0.weight", "0.0.bias", "1.weight", "1.bias"]);
    assert_eq!(nested.parameter_count(), 6 + 3 + 3 + 1);
    assert_eq!(Relu.parameter_count(), 0);
}

#[test]
fn activations_as_modules_equal_the_methods() {
    let x = Tensor::from([-2.0, -0.5, 0.0, 0.5, 3.0]);
    assert_eq!(bits(&Relu.forward(x.clone()).to_vec()), bits(&x.relu().to_vec()));
    assert_eq!(
        bits(&Sigmoid.forward(x.clone()).to_vec()),
        bits(&x.sigmoid().to_vec())
    );
    assert_eq!(bits(&Tanh.forward(x.clone()).to_vec()), bits(&x.tanh().to_vec()));
    assert_eq!(bits(&Gelu.forward(x.clone()).to_vec()), bits(&x.gelu().to_vec()));
    assert_eq!(
        bits(&GeluTanh.forward(x.clone()).to_vec()),
        bits(&x.gelu_tanh().to_vec())
    );
    assert_eq!(Relu.forward(x).to_array(), [0.0, 0.0, 0.0, 0.5, 3.0]);
}

#[test]
fn mlp_forward_is_relu_composition() {
    let model = Mlp::<3, 4, 2>::init(&mut rng(8));
    let x = [0.5f32, -1.5, 2.0];
    let (w0, b0) = (model.0.weight.to_vec(), model.0.bias.as_ref().unwrap().to_vec());
    let (w2, b2) = (model.2.weight.to_vec(), model.2.bias.as_ref().unwrap().to_vec());
    let (h, h_scale) = linear64(&x, &w0, Some(&b0), 3, 4);
    let got = model.forward(Tensor::from(x)).to_vec();
    for k in 0..2 {
        let mut y = b2[k] as f64;
        // The forward pass on absolute values: the scale of f32 rounding through both layers.
        let mut scale = (b2[k] as f64).abs();
        for j in 0..4 {
            y += w2[k * 4 + j] as f64 * h[j].max(0.0);
            scale += (w2[k * 4 + j] as f64).abs() * h_scale[j];
        }
        // ≤ 4 + 1 roundings in the hidden sums carried through, ≤ 4 + 1 in the output sum, each
        // ≤ u·scale: 16ε·scale has room to spare.
        assert!(
            (got[k] as f64 - y).abs() <= 16.0 * EPS * scale,
            "{} vs {y}",
            got[k]
        );
    }
}

#[test]
fn load_state_dict_checks_everything_before_changing_anything() {
    let mut model = Mlp::<2, 3, 1>::init(&mut rng(9));
    let before = model.state_dict();
    let donor = Mlp::<2, 3, 1>::init(&mut rng(10));

    // Missing: the first three entries load nothing (the check precedes any change).
    let mut state = donor.state_dict();
    state.pop();
    let err = model.load_state_dict(&state).unwrap_err();
    assert_eq!(err.to_string(), "2.bias: is missing from the state");
    assert_eq!(model.state_dict(), before);
    // Misnamed: the entries no parameter takes are listed.
    let mut state = donor.state_dict();
    state[3].0 = "2.b".into();
    assert_eq!(
        model.load_state_dict(&state).unwrap_err().to_string(),
        "2.bias: is missing from the state, whose other tensors are \"2.b\""
    );
    // Names saved from a model nested in another: the message shows one and says what to do.
    let state: Vec<_> = donor
        .state_dict()
        .into_iter()
        .map(|(name, dims, values)| (format!("mlp.{name}"), dims, values))
        .collect();
    assert_eq!(
        model.load_state_dict(&state).unwrap_err().to_string(),
        "0.weight: is missing from the state, which has \"mlp.0.weight\": rename the state's \
         entries to the model's names (strip the prefix) first"
    );
    assert_eq!(model.state_dict(), before);
    // Misshapen: right count, wrong dims; right dims, wrong count.
    let mut state = donor.state_dict();
    state[0].1 = vec![2, 3];
    assert_eq!(
        model.load_state_dict(&state).unwrap_err().to_string(),
        "0.weight: shape [2, 3] does not match the parameter's [3, 2]"
    );
    let mut state = donor.state_dict();
    state[3].2.push(1.0);
    assert_eq!(
        model.load_state_dict(&state).unwrap_err().to_string(),
        "2.bias: 2 values for shape [1], which holds 1"
    );
    // Extra.
    let mut state = donor.state_dict();
    state.push(("3.weight".into(), vec![1], vec![0.0]));
    let err = model.load_state_dict(&state).unwrap_err();
    assert!(
        matches!(&err, Error::Data { location, .. } if location == "3.weight"),
        "{err:?}"
    );
    assert_eq!(model.state_dict(), before);
    // Repeated: a second entry of the same name would otherwise be ignored (or win) silently.
    let mut state = donor.state_dict();
    let mut again = state[1].clone();
    again.2.iter_mut().for_each(|v| *v = 9.0);
    state.push(again);
    let err = model.load_state_dict(&state).unwrap_err();
    assert!(
        matches!(&err, Error::Data { location, message } if location == "0.bias" && message.contains("more than once")),
        "{err:?}"
    );
    assert_eq!(model.state_dict(), before);
    // A good one, in any order, loads every value.
    let mut state = donor.state_dict();
    state.reverse();
    model.load_state_dict(&state).unwrap();
    assert_eq!(model.state_dict(), donor.state_dict());
}

// ---------------------------------------------------------------------------------------------
// LayerNorm

/// LayerNorm over rows of `w.len()` values in f64, and per row the scale of its f32 rounding:
/// `|w|·(max |x| + |mean|)/σ + |b|` at most, the magnitude of the terms each output is made of.
fn layer_norm64(x: &[f32], w: &[f32], b: &[f32], eps: f32) -> (Vec<f64>, Vec<f64>) {
    let n = w.len();
    let (mut y, mut scale) = (Vec::new(), Vec::new());
    for row in x.chunks(n) {
        let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        let sigma = (var + f64::from(eps)).sqrt();
        let big = row.iter().fold(0.0f64, |m, v| m.max(v.abs())) + mean.abs();
        for (j, v) in row.iter().enumerate() {
            let (wj, bj) = (f64::from(w[j]), f64::from(b[j]));
            y.push((v - mean) / sigma * wj + bj);
            scale.push(wj.abs() * big / sigma + bj.abs());
        }
    }
    (y, scale)
}

#[test]
fn layer_norm_matches_an_f64_reference_at_every_rank() {
    let mut r = rng(40);
    let mut norm = LayerNorm::<5>::new();
    norm.weight = Tensor::uniform_in(Default::default(), -2.0, 2.0, &mut r).requires_grad();
    norm.bias = Tensor::uniform_in(Default::default(), -1.0, 1.0, &mut r).requires_grad();
    let x: Tensor<Rank2<6, 5>> = Tensor::uniform_in(Default::default(), -3.0, 3.0, &mut r);
    // A row far from zero (the mean is subtracted before squaring) and a constant row.
    let mut values = x.to_vec();
    for (j, v) in values[5..10].iter_mut().enumerate() {
        *v = 1e4 + j as f32 * 0.5;
    }
    values[10..15].fill(7.0);
    let x: Tensor<Rank2<6, 5>> = Tensor::from_vec(values.clone(), Default::default()).unwrap();
    let (w, b) = (norm.weight.to_vec(), norm.bias.to_vec());
    let got = norm.forward(x.clone()).to_vec();
    // Each output rounds a few f32 operations on terms of at most `scale` (the mean's own
    // rounding at |mean| shifts x − mean by up to ε/2·|mean|, which the far row magnifies by
    // |mean|/σ): 8ε·scale bounds them.
    let (want, scale) = layer_norm64(&values, &w, &b, norm.eps);
    for (i, (g, (w, s))) in got.iter().zip(want.iter().zip(&scale)).enumerate() {
        assert!((f64::from(*g) - w).abs() <= 8.0 * EPS * s, "{i}: {g} against {w}");
    }
    // A constant row normalizes to exactly 0, leaving the bias.
    assert_eq!(bits(&got[10..15]), bits(&b));
    // The same rows at rank 3 with run-time dims, and one row at rank 1, give the same bits.
    let x3 = Tensor::from_vec(values.clone(), (2usize, 3usize, Const::<5>)).unwrap();
    assert_eq!(bits(&norm.forward(x3).to_vec()), bits(&got));
    let x1 = Tensor::<Rank1<5>>::from_vec(values[..5].to_vec(), Default::default()).unwrap();
    assert_eq!(bits(&norm.forward(x1).to_vec()), bits(&got[..5]));
    // An empty batch gives an empty output.
    let empty = Tensor::zeros_in((0usize, Const::<5>));
    assert!(norm.forward(empty).to_vec().is_empty());
}

/// Rows of one value `c` repeated, then `-c`, through a seeded LayerNorm<N>: the output must be
/// the bias bit for bit, and the input gradient of `Σ y·g` the f64 one, `(g·w − mean(g·w))/√eps`
/// per row (the normalized values are 0), within a few roundings of its terms.
fn check_constant_rows<const N: usize>(c: f32, seed: u64) {
    let mut r = rng(seed);
    let mut norm = LayerNorm::<N>::new();
    norm.weight = Tensor::uniform_in(Default::default(), 0.5, 2.0, &mut r).requires_grad();
    norm.bias = Tensor::uniform_in(Default::default(), -1.0, 1.0, &mut r).requires_grad();
    let values: Vec<f32> = [c, -c].iter().flat_map(|&v| vec![v; N]).collect();
    let x = Tensor::from_vec(values, (2usize, Const::<N>))
        .unwrap()
        .requires_grad();
    let g: Tensor<(usize, Const<N>)> = Tensor::uniform_in((2usize, Const), -1.0, 1.0, &mut r);
    let y = norm.forward(x.clone());
    let (w, b, g_values) = (norm.weight.to_vec(), norm.bias.to_vec(), g.to_vec());
    assert_eq!(
        bits(&y.to_vec()),
        bits(&[b.clone(), b].concat()),
        "N = {N}, c = {c}"
    );
    (y * g).sum_all().backward();
    let dx = x.grad().unwrap().to_vec();
    let inv = 1.0 / f64::from(norm.eps).sqrt();
    for (row, (dx, g)) in dx.chunks(N).zip(g_values.chunks(N)).enumerate() {
        let gw: Vec<f64> = g
            .iter()
            .zip(&w)
            .map(|(&g, &w)| f64::from(g) * f64::from(w))
            .collect();
        let mean = gw.iter().sum::<f64>() / N as f64;
        let mean_abs = gw.iter().map(|v| v.abs()).sum::<f64>() / N as f64;
        for (j, (&got, gw)) in dx.iter().zip(&gw).enumerate() {
            let want = (gw - mean) * inv;
            let tolerance = 8.0 * EPS * (gw.abs() + mean_abs) * inv;
            assert!(
                (f64::from(got) - want).abs() <= tolerance,
                "N = {N}, c = {c}, row {row}, {j}: {got} against {want}"
            );
        }
    }
}

/// The mean of a constant row is that value exactly, so the row normalizes to 0 at any
/// magnitude: summed and divided by N, a row of 100000.1 over 7 features had come out at ±0.93.
#[test]
fn layer_norm_of_a_constant_row_is_the_bias_at_any_magnitude() {
    for (i, c) in [100_000.1f32, 12_345.678, 1000.1, 7.7, 3.3e-3, 1e30, 0.0]
        .into_iter()
        .enumerate()
    {
        let seed = 60 + i as u64;
        check_constant_rows::<1>(c, seed);
        check_constant_rows::<3>(c, seed);
        check_constant_rows::<7>(c, seed);
        check_constant_rows::<64>(c, seed);
        check_constant_rows::<100>(c, seed);
        check_constant_rows::<1500>(c, seed);
    }
}

#[test]
fn layer_norm_of_one_feature_is_the_bias_and_its_parameters_are_named_as_pytorch() {
    let mut norm = LayerNorm::<1>::new();
    norm.bias = Tensor::from([0.25]).requires_grad();
    let y = norm.forward(Tensor::from([[3.0], [-1e30], [0.0]]));
    assert_eq!(y.to_vec(), vec![0.25; 3]);
    let model = <(Linear<4, 5>, LayerNorm<5>, Relu)>::init(&mut rng(41));
    assert_eq!(
        model.named_dims(),
        vec![
            ("0.weight".to_string(), vec![5, 4]),
            ("0.bias".to_string(), vec![5]),
            ("1.weight".to_string(), vec![5]),
            ("1.bias".to_string(), vec![5]),
        ]
    );
    let state = model.1.state_dict();
    assert_eq!(state[0].2, vec![1.0; 5], "weight starts at ones");
    assert_eq!(state[1].2, vec![0.0; 5], "bias starts at zeros");
    // The detached twin computes the same bits, untracked.
    let x = Tensor::<Rank2<3, 4>>::randn(&mut rng(42));
    let tracked = model.forward(x.clone());
    let untracked: Tensor<Rank2<3, 5>, NoGrad> = model.detached().forward(x);
    assert_eq!(bits(&tracked.to_vec()), bits(&untracked.to_vec()));
}

#[test]
fn a_tuple_of_twelve_modules_runs_them_in_order_with_flat_names() {
    type Deep = (
        Linear<2, 3>,
        Relu,
        Linear<3, 3>,
        Tanh,
        Linear<3, 3>,
        Relu,
        Linear<3, 3>,
        Sigmoid,
        Linear<3, 3>,
        Relu,
        Linear<3, 3>,
        Linear<3, 1>,
    );
    let mut rng = StdRng::seed_from_u64(5);
    let model = Deep::init(&mut rng);
    let x = Tensor::<Rank2<4, 2>>::randn(&mut rng);
    // One module after another, by hand (one nested call of twelve took rustfmt 80 s).
    let h = model.1.forward(model.0.forward(x.clone()));
    let h = model.3.forward(model.2.forward(h));
    let h = model.5.forward(model.4.forward(h));
    let h = model.7.forward(model.6.forward(h));
    let h = model.9.forward(model.8.forward(h));
    let by_hand = model.11.forward(model.10.forward(h));
    assert_eq!(model.forward(x).to_vec(), by_hand.to_vec());
    let names: Vec<String> = model.named_dims().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names.first().map(String::as_str), Some("0.weight"));
    assert_eq!(names.last().map(String::as_str), Some("11.bias"));
    assert_eq!(names.len(), 14);
}
