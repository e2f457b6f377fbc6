//! softplus, SiLU and binary cross entropy on logits against f64 evaluated by hand, over sweeps
//! that cross the regions where the naive formulas cancel or overflow, and against PyTorch's
//! values; errors, empty inputs and gradients.

use teenygrad::Error;
use teenygrad::prelude::*;
use teenygrad::tensor::{binary_cross_entropy_with_logits as bce, try_binary_cross_entropy_with_logits};

#[path = "support/ulps.rs"]
mod ulps;
use ulps::ulps;

/// Logits from −120 to 120, denser near 0, and the specials that are finite.
fn sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (-2400..=2400).map(|k| k as f32 * 0.05).collect();
    xs.extend((-60..=60).map(|k| (k as f32 * 0.5).exp2() * if k % 2 == 0 { 1.0 } else { -1.0 }));
    xs.extend([
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-30,
        -1e-30,
        88.7,
        -88.7,
        1e30,
        -1e30,
        f32::MAX,
        f32::MIN,
    ]);
    xs
}

fn softplus64(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// softplus's bound in ulps: `e^-|x|` within 1.02 ulp, which `log1p` passes on at most
/// unchanged (its condition number is below 1); `log(w)` within 0.87 ulp; the quotient
/// `u/(w − 1)` (with `w − 1` exact) and the product each half an ulp. The final `max(x, 0) + …`
/// adds half an ulp of the result and shrinks the rest. 1.02 + 0.87 + 0.5 + 0.5 < 3.
const SOFTPLUS_ULPS: f64 = 3.0;

#[test]
fn softplus_within_a_few_ulps_everywhere() {
    let xs = sweep();
    let got = Tensor::from_vec(xs.clone(), (xs.len(),))
        .unwrap()
        .softplus()
        .to_vec();
    for (&x, &y) in xs.iter().zip(&got) {
        let want = softplus64(x as f64);
        assert!(
            ulps(y, want) <= SOFTPLUS_ULPS,
            "softplus({x:e}) = {y:e}, want {want:e}"
        );
    }
    // The ends: exactly x far right, 0 at −inf, inf at inf, NaN stays NaN.
    let ends = Tensor::from([f32::NEG_INFINITY, f32::INFINITY, f32::NAN, 1e30])
        .softplus()
        .to_vec();
    assert_eq!(ends[..2], [0.0, f32::INFINITY]);
    assert!(ends[2].is_nan() && ends[3] == 1e30);
}

#[test]
fn silu_is_x_times_sigmoid_within_its_rounding() {
    // `sigmoid` is `1/(1 + e^-x)`: e^-x within 1.02 ulp, the sum and the quotient half an ulp
    // each, then one product: 2.52 ulps, checked as 3. Below −87.3 sigmoid is subnormal, where
    // its rounding is up to half of 2⁻¹⁴⁹ whatever its size: `|x|·2⁻¹⁵⁰` more. Below −88.73,
    // `e^-x` overflows and sigmoid is 0, so SiLU is −0 though it is a normal number there
    // (−2.7e-37 at −88.7); PyTorch's `silu` (`x / (1 + e^-x)`) gives −0 too.
    let xs = sweep();
    let got = Tensor::from_vec(xs.clone(), (xs.len(),)).unwrap().silu().to_vec();
    for (&x, &y) in xs.iter().zip(&got) {
        let x64 = x as f64;
        let want = x64 / (1.0 + (-x64).exp());
        if x < -88.73 {
            assert_eq!(y, 0.0, "silu({x:e})");
            continue;
        }
        let ulp = (f32::from_bits((want as f32).abs().to_bits() + 1) - (want as f32).abs()) as f64;
        let bound = 3.0 * ulp + x64.abs() * 2f64.powi(-150);
        assert!(
            (y as f64 - want).abs() <= bound,
            "silu({x:e}) = {y:e}, want {want:e}"
        );
    }
}

#[test]
fn silu_gradient_matches_pytorch_near_its_zero_too() {
    // PyTorch 2.5.1's gradient of `silu` at these points (its zero is near −1.278). Both compute
    // `σ·(1 + x·(1 − σ))` in f32 from a sigmoid within a few ulps, so they differ by a few ulps
    // of the formula's larger term, σ or |x|·σ·(1 − σ), whatever the result's size.
    let xs = [
        -20.0f32, -5.0, -1.5, -1.28, -1.25, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 20.0,
    ];
    let torch = [
        -3.916192170549948e-08,
        -0.02654743380844593,
        -0.0412941612303257,
        -0.0003340915427543223,
        0.006319149397313595,
        0.07232948392629623,
        0.260038822889328,
        0.5,
        0.7399612069129944,
        0.9276705384254456,
        1.0881041288375854,
        1.0,
    ];
    let x = Tensor::from(xs).requires_grad();
    x.silu().sum_all().backward();
    for ((&x, &got), want) in xs.iter().zip(&x.grad().unwrap().to_vec()).zip(torch) {
        let x64 = x as f64;
        let s = 1.0 / (1.0 + (-x64).exp());
        let scale = s.max((x64 * s * (1.0 - s)).abs());
        assert!(
            (got as f64 - want).abs() <= 4.0 * f32::EPSILON as f64 * scale,
            "silu'({x}) {got:e} against {want:e}"
        );
    }
}

/// PyTorch 2.5.1's `softplus` and its gradient, at the logits below.
const TORCH_LOGITS: [f32; 12] = [
    -100.0, -30.0, -20.0, -14.85, -1.0, 0.0, 1e-7, 1.0, 14.85, 20.0, 30.0, 100.0,
];
const TORCH_SOFTPLUS: [f64; 12] = [
    3.783505853677006e-44,
    9.357622912219837e-14,
    2.06115369216775e-09,
    3.5540759313335e-07,
    0.3132616877555847,
    0.6931471824645996,
    0.6931472420692444,
    1.31326162815094,
    14.850000381469727,
    20.0,
    30.0,
    100.0,
];
const TORCH_SOFTPLUS_GRAD: [f64; 12] = [
    3.783505853677006e-44,
    9.357622912219837e-14,
    2.06115369216775e-09,
    3.5540753628993116e-07,
    0.2689414322376251,
    0.5,
    0.5000000596046448,
    0.7310585975646973,
    0.9999996423721313,
    1.0,
    1.0,
    1.0,
];

#[test]
fn softplus_and_its_gradient_match_pytorch() {
    let x = Tensor::from(TORCH_LOGITS).requires_grad();
    let y = x.softplus();
    y.sum_all().backward();
    // PyTorch rounds its own f32 computation: each side within the bound of the exact value.
    for (i, (&got, &want)) in y.to_vec().iter().zip(&TORCH_SOFTPLUS).enumerate() {
        assert!(
            ulps(got, want) <= 2.0 * SOFTPLUS_ULPS,
            "softplus({}) {got:e} against {want:e}",
            TORCH_LOGITS[i]
        );
    }
    // The gradient is `sigmoid`, computed the same way on both sides (PyTorch's within 4 ulps
    // of ours).
    for (i, (&got, &want)) in x
        .grad()
        .unwrap()
        .to_vec()
        .iter()
        .zip(&TORCH_SOFTPLUS_GRAD)
        .enumerate()
    {
        let close = ulps(got, want) <= 4.0 || (want < f32::MIN_POSITIVE as f64 && got < f32::MIN_POSITIVE);
        assert!(close, "softplus'({}) {got:e} against {want:e}", TORCH_LOGITS[i]);
    }
}

#[test]
fn bce_terms_within_their_rounding_of_f64() {
    // One logit at a time, so the loss is the term itself. For a target of 0 or 1 the term is
    // softplus(±x) computed the same way; for 1/4, 1/2 and 3/4 the product `(1 − y)·x` and two
    // additions add half an ulp each of the largest part: bound `2⁻²³·(|(1 − y)·x|/2 + |r|)`
    // on top of softplus's.
    for &target in &[0.0f32, 1.0, 0.25, 0.5, 0.75] {
        for &x in sweep().iter().filter(|x| x.abs() < 1e6) {
            let got = bce(&Tensor::from([x]), &Tensor::from([target])).item();
            let (x64, y64) = (x as f64, target as f64);
            let want = (1.0 - y64) * x64 + (-x64).max(0.0) + (-x64.abs()).exp().ln_1p();
            // An ulp is at most 2⁻²³ of the value, and 2⁻¹⁴⁹ among subnormals.
            let ulp_of = |v: f64| (v.abs() * f32::EPSILON as f64).max(2f64.powi(-149));
            let bound = SOFTPLUS_ULPS * ulp_of(want) + ulp_of((1.0 - y64) * x64) / 2.0 + ulp_of(want);
            assert!(
                (got as f64 - want).abs() <= bound,
                "bce({x:e}, {target}) = {got:e}, want {want:e}"
            );
        }
    }
}

#[test]
fn bce_and_its_gradients_match_pytorch() {
    let x = Tensor::from([-40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 40.0, 30.0]).requires_grad();
    let y = Tensor::from([0.0, 1.0, 0.25, 1.0, 0.75, 0.0, 1.0, 1.0]).requires_grad();
    let loss = bce(&x, &y);
    loss.backward();
    // PyTorch 2.5.1: 0.9985595345497131, a mean of eight terms each within a few ulps.
    assert!((loss.item() as f64 - 0.9985595345497131).abs() <= 4.0 * f32::EPSILON as f64);
    // (σ(x) − y)/8 and −x/8: the second exact.
    let torch_dx = [
        5.310442663923325e-19,
        -0.11907176673412323,
        0.015942584723234177,
        -0.0625,
        -0.015942580997943878,
        0.11907176673412323,
        0.0,
        0.0,
    ];
    for (&got, &want) in x.grad().unwrap().to_vec().iter().zip(&torch_dx) {
        assert!(
            (got as f64 - want).abs() <= 4.0 * f32::EPSILON as f64 * want.abs(),
            "{got:e} against {want:e}"
        );
    }
    assert_eq!(
        y.grad().unwrap().to_vec(),
        vec![5.0, 0.375, 0.0625, -0.0, -0.0625, -0.375, -5.0, -3.75]
    );
}

#[test]
fn bce_boundaries_and_errors() {
    // A confident right answer costs its tiny true loss, not 0 (PyTorch gives 9.36e-14 for a
    // target of 1 and 0 for the mirror case, whose sum it rounds); a confident wrong one costs
    // |x|; no logit overflows.
    let right = bce(&Tensor::from([30.0, -30.0]), &Tensor::from([1.0, 0.0])).item();
    assert!(
        (right as f64 / 9.357622912219837e-14 - 1.0).abs() < 1e-6,
        "{right:e}"
    );
    assert_eq!(bce(&Tensor::from([-1e30]), &Tensor::from([1.0])).item(), 1e30);
    assert_eq!(bce(&Tensor::from([1e30]), &Tensor::from([0.0])).item(), 1e30);
    // The mean over no values is NaN, as PyTorch's.
    let none = Tensor::<(usize,)>::zeros_in((0,));
    assert!(bce(&none, &none).item().is_nan());
    // Run-time lengths that differ.
    let (a, b) = (
        Tensor::<(usize,)>::zeros_in((2,)),
        Tensor::<(usize,)>::zeros_in((3,)),
    );
    match try_binary_cross_entropy_with_logits(&a, &b).unwrap_err() {
        Error::ShapeMismatch { op, lhs, rhs, .. } => {
            assert_eq!(
                (op, lhs, rhs),
                ("binary_cross_entropy_with_logits", vec![2], vec![3])
            )
        }
        e => panic!("{e}"),
    }
}
