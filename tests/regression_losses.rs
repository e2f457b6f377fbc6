//! `l1_loss` and `huber_loss` (and `mse` beside them): values and gradients by hand and as
//! PyTorch's, against an f64 reference on seeded random inputs, the edges (empty, infinite,
//! NaN, the Huber loss's threshold) and errors.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::prelude::*;
use teenygrad::tensor::{try_huber_loss, try_l1_loss};

const EPS: f64 = f32::EPSILON as f64;

fn huber64(d: f64, delta: f64) -> f64 {
    if d.abs() < delta {
        0.5 * d * d
    } else {
        delta * (d.abs() - 0.5 * delta)
    }
}

/// PyTorch 2.5.1 on these inputs: `F.huber_loss(p, t, delta=1)`, `delta=0.5`, `F.l1_loss`,
/// `F.mse_loss`, each its value, then the prediction's and the target's gradients.
const P: [f32; 8] = [0.5, 3.0, -1.0, 1.0, -7.25, 0.0, 2.0, 0.3];
const T: [f32; 8] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -0.2];

#[test]
fn values_and_gradients_as_pytorch() {
    type Loss = fn(&Tensor<Rank1<8>, Tracked>, &Tensor<Rank1<8>, Tracked>) -> Tensor<(), Tracked>;
    let cases: [(&str, Loss, f32, [f32; 8]); 4] = [
        (
            "huber 1",
            |p, t| huber_loss(p, t, 1.0),
            1.375,
            [0.0625, 0.125, -0.125, 0.125, -0.125, 0.0, 0.125, 0.0625],
        ),
        (
            "huber 0.5",
            |p, t| huber_loss(p, t, 0.5),
            0.78125,
            [0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0, 0.0625, 0.0625],
        ),
        (
            "l1",
            |p, t| l1_loss(p, t),
            1.78125,
            [0.125, 0.125, -0.125, 0.125, -0.125, 0.0, 0.125, 0.125],
        ),
        (
            "mse",
            |p, t| mse(p, t),
            8.132_812_5,
            [0.125, 0.75, -0.25, 0.25, -1.8125, 0.0, 0.25, 0.125],
        ),
    ];
    for (name, loss, value, grad) in cases {
        let (p, t) = (Tensor::from(P).requires_grad(), Tensor::from(T).requires_grad());
        let l = loss(&p, &t);
        assert_eq!(l.item(), value, "{name}");
        l.backward();
        // Sums of a few values that are multiples of 1/64 and short products: exact in f32.
        assert_eq!(
            p.grad().unwrap().to_array(),
            grad,
            "{name}: prediction's gradient"
        );
        let negated = grad.map(|g| -g);
        assert_eq!(t.grad().unwrap().to_array(), negated, "{name}: target's gradient");
    }
}

#[test]
fn huber_at_and_around_its_threshold() {
    // At |d| = delta both pieces give delta²/2, and the gradient is ±delta; just inside, the
    // square's; just outside, the line's.
    let delta = 0.75f32;
    let inside = f32::from_bits(delta.to_bits() - 1);
    let outside = f32::from_bits(delta.to_bits() + 1);
    let d = [delta, -delta, inside, outside, -outside];
    let p = Tensor::from(d).requires_grad();
    let loss = huber_loss(&p, &Tensor::<Rank1<5>>::zeros(), delta);
    let want: f64 = d.iter().map(|&v| huber64(v as f64, delta as f64)).sum::<f64>() / 5.0;
    assert!(
        (loss.item() as f64 - want).abs() <= 4.0 * EPS * want,
        "{} vs {want}",
        loss.item()
    );
    loss.backward();
    let g = p.grad().unwrap().to_vec();
    assert_eq!(
        g,
        [delta / 5.0, -delta / 5.0, inside / 5.0, delta / 5.0, -delta / 5.0]
    );
}

#[test]
fn random_inputs_match_an_f64_reference() {
    // Each element: a subtraction, an abs and two roundings in the piece's formula, so within
    // 2ε relative after the inputs' own difference (computed in f32: half an ulp of d, which
    // the square doubles). The mean's sum of n terms in f32 adds at most (n − 1)·ε of the sum
    // of their magnitudes (all terms are non-negative, so that is the sum itself).
    let mut rng = StdRng::seed_from_u64(41);
    for _ in 0..20 {
        let p: Vec<f32> = (0..257).map(|_| rng.random_range(-4.0..4.0)).collect();
        let t: Vec<f32> = (0..257).map(|_| rng.random_range(-4.0..4.0)).collect();
        let delta: f32 = rng.random_range(0.1..3.0);
        let pt = Tensor::from_vec(p.clone(), (p.len(),)).unwrap();
        let tt = Tensor::from_vec(t.clone(), (t.len(),)).unwrap();
        let d64: Vec<f64> = p.iter().zip(&t).map(|(&a, &b)| a as f64 - b as f64).collect();
        let n = d64.len() as f64;
        let tol = |sum: f64| (3.0 + (n - 1.0)) * EPS * sum / n;
        let huber = d64.iter().map(|&d| huber64(d, delta as f64)).sum::<f64>();
        let got = huber_loss(&pt, &tt, delta).item() as f64;
        assert!(
            (got - huber / n).abs() <= tol(huber),
            "huber {got} vs {}",
            huber / n
        );
        let l1 = d64.iter().map(|d| d.abs()).sum::<f64>();
        let got = l1_loss(&pt, &tt).item() as f64;
        assert!((got - l1 / n).abs() <= tol(l1), "l1 {got} vs {}", l1 / n);
    }
}

#[test]
fn edges_empty_single_infinite_and_nan() {
    // No elements: the mean of nothing is NaN, as PyTorch's.
    let none = Tensor::<(usize,)>::zeros_in((0,));
    assert!(l1_loss(&none, &none).item().is_nan());
    assert!(huber_loss(&none, &none, 1.0).item().is_nan());
    // One element.
    let (a, b) = (Tensor::from([2.5]), Tensor::from([0.5]));
    assert_eq!(
        (l1_loss(&a, &b).item(), huber_loss(&a, &b, 1.0).item()),
        (2.0, 1.5)
    );
    // An infinite difference: an infinite loss with a finite gradient.
    let p = Tensor::from([f32::INFINITY, 0.0]).requires_grad();
    let loss = huber_loss(&p, &Tensor::from([0.0, 0.0]), 2.0);
    assert_eq!(loss.item(), f32::INFINITY);
    loss.backward();
    assert_eq!(p.grad().unwrap().to_array(), [1.0, 0.0]);
    // A NaN difference reaches its own gradient entry only (PyTorch's clamp passes it through).
    let p = Tensor::from([f32::NAN, 3.0]).requires_grad();
    let loss = huber_loss(&p, &Tensor::from([0.0, 0.0]), 1.0);
    assert!(loss.item().is_nan());
    loss.backward();
    let g = p.grad().unwrap().to_vec();
    assert!(g[0].is_nan() && g[1] == 0.5);
}

#[test]
fn mismatched_run_time_shapes_are_errors() {
    let a = Tensor::<(usize,)>::zeros_in((3,));
    let b = Tensor::<(usize,)>::zeros_in((2,));
    let e = try_l1_loss(&a, &b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "l1_loss: shapes [3] and [2] are incompatible (prediction and target must have the same shape)"
    );
    let e = try_huber_loss(&a, &b, 1.0).unwrap_err();
    assert!(
        matches!(e, Error::ShapeMismatch { op: "huber_loss", .. }),
        "{e:?}"
    );
}

#[test]
fn a_delta_that_is_not_positive_is_an_error() {
    let x = Tensor::from([1.0]);
    for delta in [0.0, -0.0, -1.0, f32::NAN, f32::NEG_INFINITY] {
        match try_huber_loss(&x, &x, delta) {
            Err(Error::InvalidArgument {
                op: "huber_loss",
                message,
            }) => {
                assert_eq!(message, format!("delta = {delta} is not positive"))
            }
            other => panic!("delta {delta}: {:?}", other.map(|l| l.item())),
        }
    }
    // The smallest positive delta and an infinite one are settings like any other.
    assert_eq!(huber_loss(&x, &Tensor::from([0.0]), f32::INFINITY).item(), 0.5);
    assert!(try_huber_loss(&x, &x, f32::from_bits(1)).is_ok());
}

#[test]
#[should_panic(expected = "huber_loss: delta = 0 is not positive")]
fn huber_needs_a_positive_delta() {
    let x = Tensor::from([1.0]);
    let _ = huber_loss(&x, &x, 0.0);
}

#[test]
#[should_panic(expected = "huber_loss: delta = NaN is not positive")]
fn huber_rejects_a_nan_delta() {
    let x = Tensor::from([1.0]);
    let _ = huber_loss(&x, &x, f32::NAN);
}

#[test]
fn method_forms_are_the_functions() {
    let (p, t) = (Tensor::from(P).requires_grad(), Tensor::from(T));
    assert_eq!(p.mse(&t).item(), mse(&p, &t).item());
    assert_eq!(p.l1_loss(&t).item(), l1_loss(&p, &t).item());
    assert_eq!(p.huber_loss(&t, 0.5).item(), huber_loss(&p, &t, 0.5).item());
    let bce = teenygrad::tensor::binary_cross_entropy_with_logits(&p, &t.sigmoid());
    assert_eq!(
        p.binary_cross_entropy_with_logits(&t.sigmoid()).item(),
        bce.item()
    );
    let logits = Tensor::from([[0.5, -1.0, 2.0], [0.0, 3.0, -2.0]]);
    let labels = Labels::new(vec![2, 0], Const::<2>).unwrap();
    let f = cross_entropy(&logits, &labels).unwrap().item();
    assert_eq!(logits.cross_entropy(&labels).unwrap().item(), f);
    let log_probs = logits.log_softmax::<Axis<1>>();
    let nll = teenygrad::tensor::nll_loss(&log_probs, &labels).unwrap().item();
    assert_eq!(log_probs.nll_loss(&labels).unwrap().item(), nll);
    // The method's gradient is the function's.
    p.huber_loss(&t, 0.5).backward();
    assert_eq!(
        p.grad().unwrap().to_array(),
        [0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0, 0.0625, 0.0625]
    );
}
