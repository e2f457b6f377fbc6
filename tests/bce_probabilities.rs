//! Binary cross entropy on probabilities (`binary_cross_entropy`, PyTorch's `BCELoss`): each
//! term against f64 over seeded and extreme probabilities, PyTorch's values and gradients, the
//! floors at 0 and 1, an invariant of the gradient, and errors.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::prelude::*;
use teenygrad::tensor::{binary_cross_entropy as bce, try_binary_cross_entropy};

#[path = "support/ulps.rs"]
mod ulps;
use ulps::ulps;

/// A term's bound in ulps. `log p` is within 0.87 ulp and the product with `y` adds half an
/// ulp; `log1p(−p)` is within 1.87 (the log, then the quotient and product of its method at
/// half an ulp each), `y − 1` and the product with it add half an ulp each. Both parts are of
/// one sign, so their difference adds half an ulp of the result and cancels nothing:
/// 2.87 + 0.5 + 0.5 < 4.
const TERM_ULPS: f64 = 4.0;

fn term64(p: f32, y: f32) -> f64 {
    let (p, y) = (p as f64, y as f64);
    -(y * p.ln().max(-100.0) + (1.0 - y) * (-p).ln_1p().max(-100.0))
}

/// Probabilities across (0, 1), denser near both ends, and the ends themselves.
fn probabilities() -> Vec<f32> {
    let mut r = StdRng::seed_from_u64(7);
    let mut ps: Vec<f32> = (0..2000).map(|_| r.random_range(0.0..1.0)).collect();
    for k in 1..=149 {
        let tiny = 2f32.powi(-k);
        ps.extend([tiny, 1.0 - tiny.max(f32::EPSILON / 2.0)]);
    }
    ps.extend([0.0, 1.0, 0.5, 1e-30, f32::MIN_POSITIVE]);
    ps
}

#[test]
fn terms_within_their_rounding_of_f64() {
    for &y in &[0.0f32, 1.0, 0.25, 0.5, 0.1, 0.9] {
        for &p in &probabilities() {
            // One value at a time, so the loss is the term itself.
            let got = bce(&Tensor::from([p]), &Tensor::from([y])).item();
            let want = term64(p, y);
            assert!(
                ulps(got, want) <= TERM_ULPS,
                "bce({p:e}, {y}) = {got:e}, want {want:e}"
            );
        }
    }
}

#[test]
fn values_and_gradients_match_pytorch() {
    let p = Tensor::from([0.0, 0.0, 1.0, 1.0, 0.5, 1e-30, 0.3, 1.0 - 1e-7, 0.9, 1e-4]).requires_grad();
    let y = Tensor::from([0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.2, 0.0, 0.25, 1.0]).requires_grad();
    let loss = bce(&p, &y);
    loss.backward();
    // PyTorch 2.15 (`F.binary_cross_entropy`, mean): a mean of ten terms within 4 ulps each,
    // the largest 100.
    assert!((loss.item() as f64 - 29.72028160095215).abs() <= 8.0 * f32::EPSILON as f64 * 30.0);
    // (p − y)/max(p·(1 − p), 1e-12)/10: ±1e12/10 where 0 or 1 is wrong, 0 where right. Both
    // sides round the same few operations.
    let torch_dp = [
        0.0,
        -99999997952.0,
        0.0,
        99999997952.0,
        0.0,
        -99999997952.0,
        0.0476190522313118,
        838860.8125,
        0.7222220301628113,
        -1000.0001220703125,
    ];
    for (&got, &want) in p.grad().unwrap().to_vec().iter().zip(&torch_dp) {
        assert!(ulps(got, want) <= 2.0, "{got:e} against {want:e}");
    }
    // log((1 − p)/p)/10, not floored: infinite at 0 and 1. The logs as in the terms.
    let torch_dy = [
        f64::INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NEG_INFINITY,
        0.0,
        6.907755374908447,
        0.08472977578639984,
        -1.594238519668579,
        -0.2197224348783493,
        0.9210240244865417,
    ];
    for (&got, &want) in y.grad().unwrap().to_vec().iter().zip(&torch_dy) {
        assert!(
            got as f64 == want || ulps(got, want) <= 8.0,
            "{got:e} against {want:e}"
        );
    }
}

#[test]
fn floors_empty_and_out_of_range() {
    // A certain mistake costs 100 (the floor), a certain right answer 0.
    let certain = bce(
        &Tensor::from([0.0, 1.0, 0.0, 1.0]),
        &Tensor::from([1.0, 0.0, 0.0, 1.0]),
    );
    assert_eq!(certain.item(), 50.0);
    // A probability rounded to 1 from a sigmoid of 20 costs the floor for a target of 0, where
    // the logits' form keeps the true 20.
    let x = Tensor::from([20.0]);
    assert_eq!(x.sigmoid().to_vec(), [1.0]);
    assert_eq!(bce(&x.sigmoid(), &Tensor::from([0.0])).item(), 100.0);
    assert!((x.binary_cross_entropy_with_logits(&Tensor::from([0.0])).item() - 20.0).abs() < 1e-5);
    // No values: NaN, as PyTorch's mean. Outside [0, 1]: NaN (PyTorch refuses it).
    let none = Tensor::<(usize,)>::zeros_in((0,));
    assert!(bce(&none, &none).item().is_nan());
    for p in [-0.5, 1.5, f32::NAN] {
        assert!(
            bce(&Tensor::from([p]), &Tensor::from([1.0])).item().is_nan(),
            "{p}"
        );
    }
    let (a, b) = (
        Tensor::<(usize,)>::zeros_in((2,)),
        Tensor::<(usize,)>::zeros_in((3,)),
    );
    match try_binary_cross_entropy(&a, &b).unwrap_err() {
        Error::ShapeMismatch { op, lhs, rhs, .. } => {
            assert_eq!((op, lhs, rhs), ("binary_cross_entropy", vec![2], vec![3]))
        }
        e => panic!("{e}"),
    }
}

#[test]
fn the_gradient_vanishes_where_the_prediction_is_the_target() {
    // The loss over p is least at p = y, for any y in (0, 1): its gradient there is exactly 0
    // (p − y is), and has the sign of p − y elsewhere.
    let mut r = StdRng::seed_from_u64(8);
    let y: Vec<f32> = (0..64).map(|_| r.random_range(0.01..0.99)).collect();
    let mut p = y.clone();
    for v in &mut p[32..] {
        *v = r.random_range(0.01..0.99);
    }
    let pt = Tensor::from_vec(p.clone(), (64,)).unwrap().requires_grad();
    let yt = Tensor::from_vec(y.clone(), (64,)).unwrap();
    pt.binary_cross_entropy(&yt).backward();
    for (i, g) in pt.grad().unwrap().to_vec().into_iter().enumerate() {
        let d = p[i] - y[i];
        assert!(
            g == 0.0 && d == 0.0 || g.signum() == d.signum(),
            "{i}: {g:e} for p − y = {d:e}"
        );
    }
}
