//! Leaky ReLU and ELU: values by hand and against f64 over a sweep that crosses the region where
//! `eˣ − 1` cancels, the ends and specials, gradients by hand, against PyTorch's and against
//! f64 central differences, and their modules' defaults.

use teenygrad::nn::{Elu, LeakyRelu, Module};
use teenygrad::prelude::*;

#[path = "support/ulps.rs"]
mod ulps;
use ulps::ulps;

/// Inputs from −30 to 30, dense near 0, powers of two down to 2⁻⁶⁰ on both sides, and specials.
fn sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (-3000..=3000).map(|k| k as f32 * 0.01).collect();
    xs.extend((-120..=0).flat_map(|k| [(k as f32 * 0.5).exp2(), -(k as f32 * 0.5).exp2()]));
    xs.extend([
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        -1e-30,
        -1e-5,
        -17.5,
        -88.0,
        -104.0,
    ]);
    xs
}

fn elu64(x: f64, alpha: f64) -> f64 {
    if x > 0.0 { x } else { alpha * x.exp_m1() }
}

/// ELU's bound below 0, in ulps: `(u − 1)·x / log(u)` with `u = eˣ` within 1.02 ulp. The
/// quotient is `x·(eᵗ − 1)/t` at `t = log(u)`, a function whose relative slope is below 1, so
/// `u`'s error moves it by at most 1.02 ulp; then `log` (0.87 ulp), `u − 1` (exact for `u` in
/// [½, 1], half an ulp below), the product and the quotient (half an ulp each), and the product
/// with `alpha` (half an ulp): 1.02 + 0.87 + 4 × 0.5 < 4.
const ELU_ULPS: f64 = 4.0;

#[test]
fn leaky_relu_by_hand_and_its_signs() {
    let y = Tensor::from([-2.0, -0.0, 0.0, 3.0, f32::NEG_INFINITY, f32::INFINITY]).leaky_relu(0.25);
    let got = y.to_vec();
    assert_eq!(got, [-0.5, 0.0, 0.0, 3.0, f32::NEG_INFINITY, f32::INFINITY]);
    // −0 takes the slope (`−0·s` is −0), as PyTorch's; NaN stays NaN.
    assert!(got[1].is_sign_negative() && got[2].is_sign_positive());
    assert!(Tensor::from([f32::NAN]).leaky_relu(0.01).to_vec()[0].is_nan());
    // A slope of 0 is relu; a slope of 1 the identity; a negative slope flips the left half.
    let x = Tensor::from([-3.0, 2.0]);
    assert_eq!(x.leaky_relu(0.0).to_array(), x.relu().to_array());
    assert_eq!(x.leaky_relu(1.0).to_array(), [-3.0, 2.0]);
    assert_eq!(x.leaky_relu(-0.5).to_array(), [1.5, 2.0]);
}

#[test]
fn elu_within_a_few_ulps_everywhere() {
    let xs = sweep();
    for alpha in [1.0f32, 0.5, 1.673_263_2] {
        let got = Tensor::from_vec(xs.clone(), (xs.len(),))
            .unwrap()
            .elu(alpha)
            .to_vec();
        let mut worst = 0.0f64;
        for (&x, &y) in xs.iter().zip(&got) {
            let want = elu64(x as f64, alpha as f64);
            let error = ulps(y, want);
            worst = worst.max(error);
            assert!(error <= ELU_ULPS, "elu({x:e}, {alpha}) = {y:e}, want {want:e}");
        }
        println!(
            "elu, alpha {alpha}: worst {worst:.3} ulp over {} inputs",
            xs.len()
        );
    }
}

#[test]
fn elu_near_zero_does_not_cancel_and_its_ends_are_exact() {
    // `exp(x) − 1` in f32 is −1.0014e-5 at −1e-5 and 0 at −1e-30; these are within an ulp.
    let y = Tensor::from([-1e-5, -1e-30, -1e-8]).elu(1.0).to_vec();
    for (got, x) in y.iter().zip([-1e-5f64, -1e-30, -1e-8]) {
        let x = x as f32 as f64;
        assert!(ulps(*got, x.exp_m1()) <= 1.0, "elu({x:e}) = {got:e}");
    }
    let ends = Tensor::from([f32::NEG_INFINITY, f32::INFINITY, -200.0, f32::MAX, f32::NAN])
        .elu(2.0)
        .to_vec();
    assert_eq!(ends[..4], [-2.0, f32::INFINITY, -2.0, f32::MAX]);
    assert!(ends[4].is_nan());
    // ±0 keep their sign (`alpha·expm1(−0)` is −0; PyTorch 2.5.1, computing `eˣ − 1`, gives +0).
    let zeros = Tensor::from([0.0, -0.0]).elu(1.0).to_vec();
    assert!(zeros[0] == 0.0 && zeros[0].is_sign_positive() && zeros[1].is_sign_negative());
}

#[test]
fn elu_matches_pytorch_values_away_from_zero() {
    // PyTorch 2.5.1's `F.elu(x, alpha)` where it is within an ulp or two of exact. Near 0 it
    // computes `eˣ − 1` and loses digits: at −1e-3 it gives −9.995103e-4 (alpha 1), where the
    // exact value is −9.9950017e-4, which the sweep above holds this library to.
    let xs = [-2.0f32, -0.5, 0.0, 0.7, 3.0, -20.0];
    let torch = [
        (
            1.0,
            [-0.8646647334098816, -0.39346933364868164, 0.0, 0.7, 3.0, -1.0],
        ),
        (
            0.5,
            [-0.4323323667049408, -0.19673466682434082, 0.0, 0.7, 3.0, -0.5],
        ),
    ];
    for (alpha, want) in torch {
        let got = Tensor::from(xs).elu(alpha).to_vec();
        for ((&x, &g), w) in xs.iter().zip(&got).zip(want) {
            let w = w as f32;
            let ulp = f32::from_bits(w.abs().to_bits() + 1) - w.abs();
            assert!(
                (g - w).abs() <= 2.0 * ulp,
                "elu({x}, {alpha}) = {g:e}, PyTorch {w:e}"
            );
        }
    }
}

#[test]
fn gradients_by_hand_and_as_pytorch() {
    // Leaky ReLU: 1 above 0, the slope at and below 0 and for NaN (PyTorch's `x > 0` test).
    let x = Tensor::from([-2.0, -0.0, 0.0, 3.0, f32::NAN]).requires_grad();
    x.leaky_relu(0.25).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [0.25, 0.25, 0.25, 1.0, 0.25]);
    // ELU: `alpha·eˣ` at and below 0, 1 above it and for NaN. PyTorch 2.5.1's gradients.
    let xs = [-2.0f32, -0.5, -1e-3, 0.0, 0.7, 3.0, -20.0];
    let torch = [
        (
            1.0,
            [
                0.1353352814912796,
                0.6065306663513184,
                0.9990004897117615,
                1.0,
                1.0,
                1.0,
                2.06115369216775e-09,
            ],
        ),
        (
            0.5,
            [
                0.0676676407456398,
                0.3032653331756592,
                0.49950024485588074,
                0.5,
                1.0,
                1.0,
                1.030576846083875e-09,
            ],
        ),
    ];
    for (alpha, want) in torch {
        let x = Tensor::from(xs).requires_grad();
        x.elu(alpha).sum_all().backward();
        for (&g, w) in x.grad().unwrap().to_vec().iter().zip(want) {
            // `alpha·eˣ` from the same exp within an ulp: equal to 2 ulps.
            let w = w as f32;
            let ulp = f32::from_bits(w.abs().to_bits() + 1) - w.abs();
            assert!(
                (g - w).abs() <= 2.0 * ulp,
                "elu'(alpha {alpha}) = {g:e}, PyTorch {w:e}"
            );
        }
    }
    let x = Tensor::from([f32::NAN, f32::NEG_INFINITY]).requires_grad();
    x.elu(1.0).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [1.0, 0.0]);
}

#[test]
fn gradients_against_f64_central_differences() {
    // Away from the kink at 0, where both functions are smooth: the difference of the f64
    // functions at h = 1e-6 is within h²·|f'''| ≈ 1e-12 of the derivative, far below the f32
    // gradient's own rounding (a few ulps of `alpha·eˣ`).
    let xs: Vec<f32> = (-40..=40).filter(|k| *k != 0).map(|k| k as f32 * 0.123).collect();
    for (alpha, slope) in [(1.0f32, 0.01f32), (0.3, 0.2)] {
        let x = Tensor::from_vec(xs.clone(), (xs.len(),)).unwrap().requires_grad();
        (x.elu(alpha) + x.leaky_relu(slope)).sum_all().backward();
        let grad = x.grad().unwrap().to_vec();
        let h = 1e-6;
        for (&x, &g) in xs.iter().zip(&grad) {
            let f = |v: f64| elu64(v, alpha as f64) + if v > 0.0 { v } else { slope as f64 * v };
            let x = x as f64;
            let fd = (f(x + h) - f(x - h)) / (2.0 * h);
            assert!(
                (g as f64 - fd).abs() <= 4.0 * f32::EPSILON as f64 * fd.abs() + 1e-9,
                "at {x}: {g} vs {fd}"
            );
        }
    }
}

#[test]
fn modules_default_to_pytorchs_settings() {
    assert_eq!(LeakyRelu::default(), LeakyRelu { slope: 0.01 });
    assert_eq!(Elu::default(), Elu { alpha: 1.0 });
    assert_eq!((LeakyRelu::new(0.2).slope, Elu::new(0.3).alpha), (0.2, 0.3));
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(0);
    assert_eq!(<LeakyRelu as Init>::init(&mut rng), LeakyRelu::default());
    let x = Tensor::from([-1.0, 2.0]);
    assert_eq!(
        LeakyRelu { slope: 0.1 }.forward(x.clone()).to_vec(),
        x.leaky_relu(0.1).to_vec()
    );
    assert_eq!(
        Elu { alpha: 0.5 }.forward(x.clone()).to_vec(),
        x.elu(0.5).to_vec()
    );
    // In a model: no parameters, and the gradient passes through to the layer before.
    let mut model = <(Linear<2, 3>, LeakyRelu, Linear<3, 1>, Elu)>::init(&mut rng);
    let mut names = Vec::new();
    model.visit("", &mut |name, _| names.push(name.to_string()));
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    model.forward(x.reshape::<Rank2<1, 2>>()).sum_all().backward();
    Sgd::new(0.1).step(&mut model);
}
