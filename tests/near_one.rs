//! `log1p` and `expm1` against f64 over sweeps that cross the region where their naive forms
//! cancel, their ends and specials, and gradients by hand, as PyTorch's and against f64
//! central differences.

use teenygrad::prelude::*;

#[path = "support/ulps.rs"]
mod ulps;
use ulps::ulps;

/// Values from −30 to 30 (from −1 for `log1p`'s domain), powers of two down to 2⁻¹²⁰ on both
/// sides, and the largest finite values.
fn sweep(low: f32) -> Vec<f32> {
    let mut xs: Vec<f32> = (-3000..=3000).map(|k| k as f32 * 0.01).collect();
    xs.extend((-240..=0).flat_map(|k| [(k as f32 * 0.5).exp2(), -(k as f32 * 0.5).exp2()]));
    xs.extend([
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        1e30,
        f32::MAX,
        -0.999_999_9,
        88.0,
        88.7,
    ]);
    xs.retain(|&x| x >= low);
    xs
}

fn values(xs: &[f32], f: impl Fn(&Tensor<(usize,)>) -> Tensor<(usize,)>) -> Vec<f32> {
    f(&Tensor::from_vec(xs.to_vec(), (xs.len(),)).unwrap()).to_vec()
}

/// `log1p`'s bound: `log(w)` within 0.87 ulp; the rounding of `w = 1 + x` moves
/// `log(w)/(w − 1)`, whose relative slope is below 1, by at most half an ulp; `w − 1` (exact
/// for `w` in [½, 2], half an ulp beyond), the product and the quotient half an ulp each:
/// 0.87 + 4 × 0.5 < 3.
const LOG1P_ULPS: f64 = 3.0;

/// `expm1`'s bound: `eˣ` within 1.02 ulp moves `(u − 1)/log(u)`, whose relative slope is below
/// 1, by at most that; `log(u)` 0.87 ulp; `u − 1` (exact for `u` in [½, 2]), the product and
/// the quotient half an ulp each: 1.02 + 0.87 + 3 × 0.5 < 3.5.
const EXPM1_ULPS: f64 = 3.5;

/// `f` over `xs` within `bound` ulps of `exact` in f64, or equal where the exact value rounds
/// to an infinity; prints the worst error.
fn assert_within(
    name: &str,
    xs: &[f32],
    f: impl Fn(&Tensor<(usize,)>) -> Tensor<(usize,)>,
    exact: fn(f64) -> f64,
    bound: f64,
) {
    let mut worst = 0.0f64;
    for (&x, &y) in xs.iter().zip(&values(xs, f)) {
        let want = exact(x as f64);
        if (want as f32).is_infinite() {
            assert_eq!(y, want as f32, "{name}({x:e})");
            continue;
        }
        worst = worst.max(ulps(y, want));
        assert!(ulps(y, want) <= bound, "{name}({x:e}) = {y:e}, want {want:e}");
    }
    println!("{name}: worst {worst:.3} ulp over {} inputs", xs.len());
}

#[test]
fn log1p_within_a_few_ulps_everywhere() {
    assert_within("log1p", &sweep(-1.0), |t| t.log1p(), f64::ln_1p, LOG1P_ULPS);
}

#[test]
fn expm1_within_a_few_ulps_everywhere() {
    assert_within("expm1", &sweep(f32::MIN), |t| t.expm1(), f64::exp_m1, EXPM1_ULPS);
}

#[test]
fn ends_and_specials() {
    let inf = f32::INFINITY;
    let y = Tensor::from([-1.0, -2.0, inf, f32::NAN, -0.0, 1e-30])
        .log1p()
        .to_vec();
    assert_eq!((y[0], y[2], y[5]), (-inf, inf, 1e-30));
    assert!(y[1].is_nan() && y[3].is_nan());
    assert!(y[4] == 0.0 && y[4].is_sign_negative(), "log1p(−0) is −0");
    let y = Tensor::from([-inf, inf, 89.0, f32::NAN, -0.0, -1e-30, -200.0])
        .expm1()
        .to_vec();
    assert_eq!((y[0], y[1], y[2], y[5], y[6]), (-1.0, inf, inf, -1e-30, -1.0));
    assert!(y[3].is_nan());
    assert!(y[4] == 0.0 && y[4].is_sign_negative(), "expm1(−0) is −0");
}

/// `f`'s values and gradients (of the summed outputs) at `xs` within `value_ulps` and
/// `grad_ulps` of PyTorch's.
fn assert_as_pytorch(
    name: &str,
    xs: &[f32],
    f: impl Fn(&Tensor<(usize,), Tracked>) -> Tensor<(usize,), Tracked>,
    torch: &[(f64, f64)],
    (value_ulps, grad_ulps): (f64, f64),
) {
    let x = Tensor::from_vec(xs.to_vec(), (xs.len(),))
        .unwrap()
        .requires_grad();
    let y = f(&x);
    y.sum_all().backward();
    let (values, grads) = (y.to_vec(), x.grad().unwrap().to_vec());
    for (i, &(value, grad)) in torch.iter().enumerate() {
        assert!(
            ulps(values[i], value) <= value_ulps && ulps(grads[i], grad) <= grad_ulps,
            "{name}({}): {} and {} vs PyTorch's {value} and {grad}",
            xs[i],
            values[i],
            grads[i]
        );
    }
}

#[test]
fn values_and_gradients_as_pytorch() {
    // PyTorch 2.5.1's `torch.log1p` and `torch.expm1`, and their gradients.
    let log1p = [
        (1.000000013351432e-10, 1.0),
        (-0.6931471824645996, 2.0),
        (1.3862943649291992, 0.25),
        (-9.210174560546875, 9998.3408203125),
        (4.6151204109191895, 0.009900989942252636),
    ];
    let xs = [1e-10, -0.5, 3.0, -0.9999, 100.0];
    assert_as_pytorch("log1p", &xs, |x| x.log1p(), &log1p, (1.0, 0.0));
    let expm1 = [
        (1.000000013351432e-10, 1.0),
        (-0.39346933364868164, 0.6065306663513184),
        (19.08553695678711, 20.08553695678711),
        (-1.0, 0.0),
        (5.540622484676759e34, 5.540622484676759e34),
        (0.349858820438385, 1.3498587608337402),
    ];
    // Both within an ulp or two of exact; the gradient is the value plus 1, rounded once.
    let xs = [1e-10, -0.5, 3.0, -20.0, 80.0, 0.3];
    assert_as_pytorch("expm1", &xs, |x| x.expm1(), &expm1, (2.0, 2.0));
}

#[test]
fn gradients_against_f64_central_differences() {
    // Smooth everywhere here: the f64 difference at h = 1e-6·max(1, |x|) is within h²·|f'''| of
    // the derivative, far below the f32 gradient's own rounding (an ulp or two).
    let xs: Vec<f32> = (-40..=40).map(|k| k as f32 * 0.0731).collect();
    let x = Tensor::from_vec(xs.clone(), (xs.len(),)).unwrap().requires_grad();
    (x.expm1() + (x.square() + 0.5).log1p()).sum_all().backward();
    for (&x, &g) in xs.iter().zip(&x.grad().unwrap().to_vec()) {
        let f = |v: f64| v.exp_m1() + (v * v + 0.5).ln_1p();
        let (x, h) = (x as f64, 1e-6);
        let fd = (f(x + h) - f(x - h)) / (2.0 * h);
        assert!(
            (g as f64 - fd).abs() <= 4.0 * f32::EPSILON as f64 * fd.abs().max(1.0),
            "at {x}: {g} vs {fd}"
        );
    }
}
