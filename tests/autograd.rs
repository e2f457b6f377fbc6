//! Gradients from `backward()` against f64 central finite differences, for every differentiable
//! operation, through broadcasting, views, every form of matmul and tensors used several times;
//! the documented tie rules; and hand-computed cases (accumulation, `zero_grad`, `detach`, modes).
//!
//! # Finite differences and the tolerance
//!
//! Each loss is a scalar function built from `Tensor` ops on f32 leaves. For input element `x` we
//! build the same graph twice with `x` replaced by `x₊ = f32(x + h)` and `x₋ = f32(x − h)` and
//! evaluate it with the f64 reference evaluator (`reference::evaluate`: plain loops in f64 from the
//! f32 leaves; every constant in these graphs is exact in f32). The slope is
//! `(f(x₊) − f(x₋)) / (x₊ − x₋)`, the step taken in f64 from the rounded values, so rounding the
//! perturbed inputs to f32 costs nothing: it is the exact central difference around
//! `(x₊ + x₋)/2`, within half an f32 ulp (≤ 6e-8·|x|) of `x`, which moves the slope by
//! ≤ 6e-8·|x·f''|, negligible. Its errors, with `h = 1e-4`:
//!
//! - truncation, `h²/6 · |f'''|` = 1.7e-9·|f'''|; the inputs keep |f'''| below a few hundred
//!   (`recip` on |x| ≥ 0.5: 6/x⁴ ≤ 96; `b / a` with a ≥ 0.34 and b ≤ 1.6: ≤ 700), so ≤ ~1e-6;
//! - f64 rounding of the two losses, ~2⁻⁵³·|f| / h ≈ 1e-12·|f|, negligible.
//!
//! The gradient from `backward()` is computed in f32 (fused kernels): each primitive rounds to
//! within a few ulp (2⁻²⁴ ≈ 6e-8 relative), chains of ≲ 10 ops and sums of ≲ 64 terms (matmul,
//! reductions, broadcast gradients) accumulate to ≲ 1e-6 of Σ|terms|, and where terms cancel
//! Σ|terms| exceeds the element itself, so the error scales with the gradient's overall magnitude
//! rather than the element's.
//!
//! Hence the test: `|backward − numeric| ≤ 1e-5·|numeric| + 1e-5·scale`, with `scale` the largest
//! |numeric| over that input (at least 1). Measured, the worst case uses 3% of it (3e-7·scale, in
//! the composed unary chain); a wrong rule (a lost sign or factor, a transposed gradient, a missing
//! broadcast sum) is off by O(scale) and fails by orders of magnitude.
//!
//! Inputs stay at least 0.035 (≫ h) away from kinks: relu/abs at 0 and ties of max/min. The tie
//! rules themselves are tested separately, exactly.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use teenygrad::lazy::reference;
use teenygrad::prelude::*;
use teenygrad::shape::BroadcastShape;

// ---------------------------------------------------------------------------------------------
// The finite-difference harness

const H: f64 = 1e-4;
const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-5;

/// Reads a leaf's accumulated gradient (None if none reached it).
type GradReader = Box<dyn Fn() -> Option<Vec<f32>>>;

/// Builds the leaves of a loss from input values, recording how to read their gradients.
struct Leaves<'a> {
    values: &'a [Vec<f32>],
    readers: Vec<GradReader>,
}

impl Leaves<'_> {
    /// The next input as a tracked leaf of `shape`.
    fn next<S: Shape>(&mut self, shape: S) -> Tensor<S, Tracked> {
        let i = self.readers.len();
        let t = Tensor::from_vec(self.values[i].clone(), shape)
            .expect("input fits its shape")
            .requires_grad();
        let reader = t.clone();
        self.readers
            .push(Box::new(move || reader.grad().map(|g| g.to_vec())));
        t
    }
}

/// The loss built from `values` by `f`, evaluated by the f64 reference (nothing is realized).
fn reference_loss(f: &dyn Fn(&mut Leaves) -> Tensor<(), Tracked>, values: &[Vec<f32>]) -> f64 {
    let mut leaves = Leaves {
        values,
        readers: Vec::new(),
    };
    let loss = f(&mut leaves);
    reference::evaluate(&loss.lazy())[0]
}

/// Checks the gradients `backward()` gives every input of `f` against central differences.
#[track_caller]
fn gradcheck(name: &str, inputs: &[Vec<f32>], f: impl Fn(&mut Leaves) -> Tensor<(), Tracked>) {
    let mut leaves = Leaves {
        values: inputs,
        readers: Vec::new(),
    };
    let loss = f(&mut leaves);
    assert_eq!(
        leaves.readers.len(),
        inputs.len(),
        "{name}: every input becomes a leaf"
    );
    let want = reference::evaluate(&loss.lazy())[0];
    loss.backward();
    let got = loss.item() as f64;
    assert!(
        (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
        "{name}: loss {got} but reference {want}"
    );

    for (i, input) in inputs.iter().enumerate() {
        let analytic =
            (leaves.readers[i])().unwrap_or_else(|| panic!("{name}: no gradient reached input {i}"));
        assert_eq!(
            analytic.len(),
            input.len(),
            "{name}: gradient {i} has the input's shape"
        );
        let mut perturbed = inputs.to_vec();
        let numeric: Vec<f64> = (0..input.len())
            .map(|j| {
                let x = input[j] as f64;
                let (plus, minus) = ((x + H) as f32, (x - H) as f32);
                perturbed[i][j] = plus;
                let f_plus = reference_loss(&f, &perturbed);
                perturbed[i][j] = minus;
                let f_minus = reference_loss(&f, &perturbed);
                perturbed[i][j] = input[j];
                (f_plus - f_minus) / (plus as f64 - minus as f64)
            })
            .collect();
        let scale = numeric.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for j in 0..input.len() {
            let (a, n) = (analytic[j] as f64, numeric[j]);
            assert!(
                (a - n).abs() <= RTOL * n.abs() + ATOL * scale,
                "{name}: d loss / d input{i}[{j}] = {a} by backward(), {n} by finite differences"
            );
        }
    }
}

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `n` values uniform in `[lo, hi)`.
fn uniform(seed: u64, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut r = rng(seed);
    (0..n).map(|_| r.random_range(lo..hi)).collect()
}

/// `n` values in `[-1.2, 1.2]`, pairwise at least 0.07 apart and at least 0.035 away from 0: no ties
/// for max/min, no kinks for relu/abs within `h`.
fn spaced(seed: u64, n: usize) -> Vec<f32> {
    let mut r = rng(seed);
    let mut levels: Vec<i32> = (-15..15).collect();
    levels.shuffle(&mut r);
    assert!(n <= levels.len());
    levels[..n]
        .iter()
        .map(|&k| (k as f32 + 0.5) * 0.08 + r.random_range(-0.005..0.005))
        .collect()
}

/// Σ w ⊙ t with fixed, distinct weights: every element of `t` gets its own sensitivity, so a
/// gradient sent to the wrong element (a wrong permutation or broadcast) shows.
fn weigh<S>(t: &Tensor<S, Tracked>) -> Tensor<(), Tracked>
where
    S: Shape + BroadcastShape<S>,
{
    let w = uniform(9_999, t.numel(), -1.0, 1.0);
    let w = Tensor::from_vec(w, t.shape()).expect("weights fit");
    t.mul(&w).sum_all()
}

type R1<const A: usize> = (Const<A>,);
type R2<const A: usize, const B: usize> = (Const<A>, Const<B>);

// ---------------------------------------------------------------------------------------------
// Unary operations

type UnaryGrad = (
    &'static str,
    fn(&Tensor<R2<2, 3>, Tracked>) -> Tensor<R2<2, 3>, Tracked>,
    Vec<f32>,
);

#[test]
fn unary_gradients() {
    let any = || uniform(1, 6, -2.0, 2.0);
    let positive = || uniform(2, 6, 0.5, 3.0);
    let cases: Vec<UnaryGrad> = vec![
        ("neg", |x| x.neg(), any()),
        ("-x", |x| -x, any()),
        ("exp", |x| x.exp(), any()),
        ("log", |x| x.log(), positive()),
        ("sqrt", |x| x.sqrt(), positive()),
        ("recip", |x| x.recip(), positive()),
        (
            "recip of negatives",
            |x| x.recip(),
            positive().iter().map(|v| -v).collect(),
        ),
        ("sin", |x| x.sin(), uniform(3, 6, -4.0, 4.0)),
        ("cos", |x| x.cos(), uniform(4, 6, -4.0, 4.0)),
        ("abs", |x| x.abs(), spaced(5, 6)),
        ("tanh", |x| x.tanh(), any()),
        ("sigmoid", |x| x.sigmoid(), uniform(6, 6, -4.0, 4.0)),
        ("relu", |x| x.relu(), spaced(7, 6)),
        ("gelu", |x| x.gelu(), uniform(8, 6, -4.0, 4.0)),
        ("softplus", |x| x.softplus(), uniform(10, 6, -6.0, 6.0)),
        ("silu", |x| x.silu(), uniform(11, 6, -6.0, 6.0)),
        ("square", |x| x.square(), any()),
        ("powf 2.5", |x| x.powf(2.5), positive()),
        ("powf 3 of any sign", |x| x.powf(3.0), any()),
        ("powf -0.5", |x| x.powf(-0.5), positive()),
        ("composed", |x| (x.sin() * x.exp()).tanh().square(), any()),
    ];
    for (name, op, input) in cases {
        gradcheck(name, &[input], |l| weigh(&op(&l.next((Const, Const)))));
    }
}

// ---------------------------------------------------------------------------------------------
// Binary operations, with broadcasting

type BinaryGrad = (
    &'static str,
    fn(&Tensor<(usize, Const<3>), Tracked>, &Tensor<R1<3>, Tracked>) -> Tensor<(usize, Const<3>), Tracked>,
);

#[test]
fn binary_gradients_through_broadcasting() {
    // A batch of 4 rows (a run-time dim) against a row vector (a bias): the vector's gradient sums
    // over the batch.
    let cases: [BinaryGrad; 11] = [
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("pow", |a, b| a.pow(b)),
        ("add, vector first", |a, b| b.add(a)),
        ("sub, vector first", |a, b| b.sub(a)),
        ("div, vector first", |a, b| b.div(a)),
        ("mul method", |a, b| a.mul(b)),
    ];
    for (name, op) in cases {
        // positive, distinct values: pow needs a > 0, div needs b away from 0, max/min no ties
        let values = spaced(10, 15);
        let a: Vec<f32> = values[..12].iter().map(|v| v.abs() + 0.3).collect();
        let b: Vec<f32> = values[12..].iter().map(|v| v.abs() + 0.35).collect();
        gradcheck(name, &[a, b], |l| {
            let a = l.next((4usize, Const::<3>));
            let b = l.next((Const::<3>,));
            weigh(&op(&a, &b))
        });
    }
}

#[test]
fn binary_gradients_with_one_dims_and_scalars() {
    // (3, One) ⊕ (One, 4) → (3, 4): both sides are broadcast, both gradients are sums.
    let v = spaced(11, 7);
    gradcheck("outer sum", &[v[..3].to_vec(), v[3..].to_vec()], |l| {
        let col = l.next((Const::<3>, One));
        let row = l.next((One, Const::<4>));
        weigh(&(&col * &row + col.maximum(&row)))
    });
    // a tracked scalar against a matrix
    gradcheck("scalar", &[vec![0.7], uniform(12, 6, -1.0, 1.0)], |l| {
        let s = l.next(());
        let m = l.next((Const::<2>, Const::<3>));
        weigh(&(&m * &s - s.exp() / (&m * &m + 1.0)))
    });
    // a missing leading dim and a `One` in the middle: (2, One, 4) ⊕ (3, One)
    let v = uniform(13, 11, 0.5, 1.5);
    gradcheck("rank-3 broadcast", &[v[..8].to_vec(), v[8..].to_vec()], |l| {
        let a = l.next((Const::<2>, One, Const::<4>));
        let b = l.next((Const::<3>, One));
        weigh(&(a.div(&b)))
    });
}

#[test]
fn scalar_operand_gradients() {
    let x = uniform(14, 6, 0.5, 2.0);
    type Op = fn(&Tensor<R2<2, 3>, Tracked>) -> Tensor<R2<2, 3>, Tracked>;
    let cases: [(&str, Op); 8] = [
        ("x + c", |x| x + 1.5),
        ("c + x", |x| 1.5 + x),
        ("x - c", |x| x.clone() - 1.5),
        ("c - x", |x| 1.5 - x),
        ("x * c", |x| x * -2.5),
        ("c * x", |x| -2.5 * x.clone()),
        ("x / c", |x| x / 4.0),
        ("c / x", |x| 3.0 / x),
    ];
    for (name, op) in cases {
        gradcheck(name, std::slice::from_ref(&x), |l| {
            weigh(&op(&l.next((Const, Const))))
        });
    }
}

#[test]
fn where_gradients_go_to_the_chosen_branch() {
    let (a, b) = (uniform(15, 8, -1.0, 1.0), uniform(16, 8, -1.0, 1.0));
    gradcheck("where_else", &[a.clone(), b.clone()], |l| {
        let a = l.next((2usize, Const::<4>));
        let b = l.next((2usize, Const::<4>));
        // the mask comes from the data, but gets no gradient itself
        let mask = a.gt(&b.detach().exp().neg());
        weigh(&a.sin().where_else(&mask, &(&b * &b)))
    });
    // the masks in the data above pick both branches, and no perturbation by h flips one
    let picks_a = a.iter().zip(&b).filter(|(p, q)| **p > -(q.exp())).count();
    assert!(picks_a > 0 && picks_a < 8, "{picks_a} of 8 pick a");
    assert!(a.iter().zip(&b).all(|(p, q)| (p + q.exp()).abs() > 0.01));
}

// ---------------------------------------------------------------------------------------------
// Reductions

#[test]
fn reduction_gradients() {
    type X = (usize, Const<3>, Const<4>);
    let shape: X = (2, Const, Const);
    let x = spaced(20, 24);
    gradcheck("sum axis 0", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).sum::<Axis<0>>())
    });
    gradcheck("sum axis 1", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).sum::<Axis<1>>())
    });
    gradcheck("sum axes 0, 2", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).sum::<Axes2<0, 2>>())
    });
    gradcheck("sum keepdim", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).sum_keepdim::<Axis<2>>())
    });
    gradcheck("sum all, nonlinear", std::slice::from_ref(&x), |l| {
        l.next(shape).sum_all().square()
    });
    gradcheck("max axis 2", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).max::<Axis<2>>())
    });
    gradcheck("max axes 0, 1", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).max::<Axes2<0, 1>>())
    });
    gradcheck("max keepdim", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).max_keepdim::<Axis<0>>())
    });
    gradcheck("max all", std::slice::from_ref(&x), |l| {
        l.next(shape).max_all() * 3.0
    });
    gradcheck("min axis 1", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).min::<Axis<1>>())
    });
    gradcheck("min keepdim", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).min_keepdim::<Axes2<1, 2>>())
    });
    gradcheck("min all", std::slice::from_ref(&x), |l| {
        l.next(shape).min_all().exp()
    });
    gradcheck("mean axis 0", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).mean::<Axis<0>>())
    });
    gradcheck("mean keepdim", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).mean_keepdim::<Axis<2>>())
    });
    gradcheck("mean all", std::slice::from_ref(&x), |l| {
        l.next(shape).square().mean_all()
    });
    // a max-subtracted log-sum-exp, a keepdim result broadcast back against its input
    gradcheck("logsumexp", std::slice::from_ref(&x), |l| {
        let x = l.next(shape);
        let m = x.max_keepdim::<Axis<2>>();
        weigh(&((&x - &m).exp().sum_keepdim::<Axis<2>>().log() + &m))
    });
    gradcheck("var axis 1", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).var::<Axis<1>>())
    });
    gradcheck("std axes 0, 2", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).std::<Axes2<0, 2>>())
    });
    gradcheck("population std axis 1", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).std_with_correction::<Axis<1>>(0))
    });
    gradcheck("var correction 2, axes 0, 2", std::slice::from_ref(&x), |l| {
        weigh(&l.next(shape).var_with_correction::<Axes2<0, 2>>(2))
    });
}

/// Cross entropy has its own backward rule rather than its primitives' rules: check it through a
/// broadcast bias and a run-time batch, with an upstream gradient other than 1 and the logits also
/// used by another term (so their two gradients add).
#[test]
fn cross_entropy_gradient_against_finite_differences() {
    let labels = Labels::from_vec(vec![2, 0, 3]);
    let inputs = [uniform(70, 12, -2.0, 2.0), uniform(71, 4, -1.0, 1.0)];
    gradcheck("cross entropy", &inputs, |l| {
        let x = l.next((3usize, Const::<4>));
        let bias: Tensor<R1<4>, Tracked> = l.next((Const::<4>,));
        let logits = &x + &bias;
        cross_entropy(&logits, &labels).unwrap() * 2.5 + weigh(&logits)
    });
}

/// Each sample's loss, weighted by a non-uniform upstream gradient through `weigh`.
#[test]
fn per_sample_cross_entropy_gradient_against_finite_differences() {
    let labels = Labels::from_vec(vec![2, 2, 0]);
    let inputs = [uniform(74, 12, -2.0, 2.0)];
    gradcheck("per-sample cross entropy", &inputs, |l| {
        let x: Tensor<(usize, Const<4>), Tracked> = l.next((3usize, Const::<4>));
        weigh(&x.cross_entropy_per_sample(&labels).unwrap())
    });
}

/// The smoothed loss's own rule, `softmax − (1 − ε)·one_hot − ε/C`, the same way.
#[test]
fn label_smoothing_gradient_against_finite_differences() {
    let labels = Labels::from_vec(vec![1, 3, 0]);
    let inputs = [uniform(72, 12, -2.0, 2.0), uniform(73, 4, -1.0, 1.0)];
    gradcheck("label smoothing", &inputs, |l| {
        let x = l.next((3usize, Const::<4>));
        let bias: Tensor<R1<4>, Tracked> = l.next((Const::<4>,));
        let logits = &x + &bias;
        logits.cross_entropy_with_label_smoothing(&labels, 0.2).unwrap() * 2.5 + weigh(&logits)
    });
}

#[test]
fn bce_gradients_against_finite_differences() {
    // Logits of both signs and targets in [0, 1]: both inputs tracked.
    let (x, y) = (uniform(40, 6, -4.0, 4.0), uniform(41, 6, 0.0, 1.0));
    gradcheck("binary_cross_entropy_with_logits", &[x, y], |l| {
        let (x, y) = (l.next((Const::<2>, Const::<3>)), l.next((Const::<2>, Const::<3>)));
        teenygrad::tensor::binary_cross_entropy_with_logits(&x, &y)
    });
    // Probabilities away from the floors (whose kinks are at 0 and 1), used twice: once as the
    // prediction, once squared as the target.
    let p = uniform(42, 6, 0.05, 0.95);
    gradcheck("binary_cross_entropy", &[p], |l| {
        let p = l.next((Const::<2>, Const::<3>));
        teenygrad::tensor::binary_cross_entropy(&p, &(&p * &p))
    });
}

/// LayerNorm is a composite of primitives: its input, weight and bias gradients through them,
/// over a run-time batch of rows whose spreads differ (σ from about 0.2 to 2).
#[test]
fn layer_norm_gradients_against_finite_differences() {
    let mut x = uniform(72, 12, -2.0, 2.0);
    for v in &mut x[4..8] {
        *v *= 0.1;
    }
    let inputs = [x, uniform(73, 4, 0.5, 1.5), uniform(74, 4, -1.0, 1.0)];
    gradcheck("layer norm", &inputs, |l| {
        let x = l.next((3usize, Const::<4>));
        let norm = LayerNorm {
            weight: l.next((Const::<4>,)),
            bias: l.next((Const::<4>,)),
            eps: 1e-5,
        };
        weigh(&norm.forward(x))
    });
}

// ---------------------------------------------------------------------------------------------
// Views

#[test]
fn view_gradients() {
    let x = uniform(30, 24, -1.0, 1.0);
    let r3 = (Const::<2>, Const::<3>, Const::<4>);
    gradcheck("permute", std::slice::from_ref(&x), |l| {
        weigh(&l.next(r3).permute::<Axes3<2, 0, 1>>().sin())
    });
    gradcheck("batched transpose", std::slice::from_ref(&x), |l| {
        weigh(&l.next(r3).t().tanh())
    });
    gradcheck("reshape", std::slice::from_ref(&x), |l| {
        weigh(&l.next(r3).reshape::<Rank2<6, 4>>().exp())
    });
    gradcheck("flatten", std::slice::from_ref(&x), |l| {
        weigh(&l.next(r3).flatten::<24>().square())
    });
    // reshaping a permuted (non-contiguous) view copies; the gradient must come back un-permuted
    gradcheck("reshape of a permuted view", std::slice::from_ref(&x), |l| {
        weigh(
            &l.next(r3)
                .permute::<Axes3<1, 2, 0>>()
                .reshape::<Rank2<4, 6>>()
                .tanh(),
        )
    });
    gradcheck(
        "reshape_to run-time dims of a transposed view",
        &[x[..12].to_vec()],
        |l| {
            weigh(
                &l.next((3usize, Const::<4>))
                    .t()
                    .reshape_to((2usize, 6usize))
                    .square(),
            )
        },
    );
    gradcheck("transpose", &[x[..12].to_vec()], |l| {
        weigh(&(l.next((Const::<3>, Const::<4>)).t() * 2.0).exp())
    });
    gradcheck("pad", &[x[..6].to_vec()], |l| {
        let p: Tensor<Rank2<4, 6>, Tracked> =
            l.next((Const::<2>, Const::<3>)).pad(&[(1, 1), (2, 1)]).unwrap();
        weigh(&(p + 0.5).square())
    });
    gradcheck("slice", std::slice::from_ref(&x), |l| {
        let s: Tensor<Rank3<1, 2, 3>, Tracked> = l.next(r3).slice(&[1, 1, 0]).unwrap();
        weigh(&s.exp())
    });
    gradcheck("slice_to with run-time dims", std::slice::from_ref(&x), |l| {
        weigh(
            &l.next(r3)
                .slice_to((Const::<2>, 2usize, Const::<2>), &[0, 0, 2])
                .unwrap()
                .square(),
        )
    });
    gradcheck("broadcast", &[x[..3].to_vec()], |l| {
        let b: Tensor<Rank3<2, 4, 3>, Tracked> = l.next((Const::<3>,)).broadcast();
        weigh(&b.sin())
    });
    gradcheck("broadcast_to a run-time batch", &[x[..4].to_vec()], |l| {
        weigh(
            &l.next((One, Const::<4>))
                .broadcast_to((5usize, Const::<4>))
                .square(),
        )
    });
    // a chain: pad, slice part of the padding and part of the data, transpose, reshape (a copy)
    gradcheck("view chain", &[x[..12].to_vec()], |l| {
        let v = l
            .next((Const::<3>, Const::<4>))
            .pad::<Rank2<5, 4>>(&[(1, 1), (0, 0)])
            .unwrap()
            .slice::<Rank2<4, 2>>(&[0, 1])
            .unwrap()
            .t()
            .reshape::<Rank1<8>>();
        weigh(&(v.exp() * 2.0))
    });
}

// ---------------------------------------------------------------------------------------------
// Matmul

#[test]
fn matmul_gradients_in_every_form() {
    let v = |seed, n| uniform(seed, n, -1.0, 1.0);
    gradcheck("matrix x matrix", &[v(40, 12), v(41, 20)], |l| {
        let a = l.next((Const::<3>, Const::<4>));
        let b = l.next((Const::<4>, Const::<5>));
        weigh(&a.matmul(&b).tanh())
    });
    gradcheck("batched x batched", &[v(42, 24), v(43, 16)], |l| {
        let a = l.next((2usize, Const::<3>, Const::<4>));
        let b = l.next((2usize, Const::<4>, Const::<2>));
        weigh(&a.matmul(&b))
    });
    gradcheck(
        "batched x matrix (shared weights sum over the batch)",
        &[v(44, 24), v(45, 8)],
        |l| {
            let a = l.next((3usize, Const::<2>, Const::<4>));
            let w = l.next((Const::<4>, Const::<2>));
            weigh(&a.matmul(&w).sin())
        },
    );
    gradcheck("vector x matrix", &[v(46, 4), v(47, 12)], |l| {
        let x = l.next((Const::<4>,));
        let w = l.next((Const::<4>, Const::<3>));
        weigh(&x.matmul(&w))
    });
    gradcheck("matrix x vector", &[v(48, 12), v(49, 4)], |l| {
        let w = l.next((Const::<3>, Const::<4>));
        let x = l.next((Const::<4>,));
        weigh(&w.matmul(&x).exp())
    });
    gradcheck("rank 4", &[v(50, 24), v(51, 24)], |l| {
        let a = l.next((2usize, Const::<2>, Const::<2>, Const::<3>));
        let b = l.next((2usize, Const::<2>, Const::<3>, Const::<2>));
        weigh(&a.matmul(&b))
    });
    gradcheck("run-time inner dim", &[v(52, 10), v(53, 15)], |l| {
        let a = l.next((Const::<2>, 5usize));
        let b = l.next((5usize, Const::<3>));
        weigh(&a.matmul(&b))
    });
    gradcheck("transposed operands", &[v(54, 12), v(55, 20)], |l| {
        let a = l.next((Const::<4>, Const::<3>));
        let b = l.next((Const::<5>, Const::<4>));
        weigh(&a.t().matmul(&b.t()))
    });
    gradcheck("x xᵀ (one tensor on both sides)", &[v(56, 12)], |l| {
        let x = l.next((Const::<3>, Const::<4>));
        weigh(&x.matmul(&x.t()))
    });
    gradcheck("square matrix times itself", &[v(57, 9)], |l| {
        let x = l.next((Const::<3>, Const::<3>));
        weigh(&x.matmul(&x).matmul(&x))
    });
}

#[test]
fn cat_gradients() {
    let (x, y) = (uniform(32, 12, -1.0, 1.0), uniform(33, 4, -1.0, 1.0));
    // Along a middle axis, from a transposed view, and a tensor joined to itself.
    gradcheck("cat along the middle axis", &[x.clone(), y.clone()], |l| {
        let (a, b) = (
            l.next((Const::<2>, Const::<3>, Const::<2>)),
            l.next((Const::<2>, Const::<1>, Const::<2>)),
        );
        weigh(&a.cat_in(&b, Axis::<1>, Const::<4>).sin())
    });
    gradcheck(
        "cat of a transposed view and itself",
        std::slice::from_ref(&x),
        |l| {
            let a = l.next((Const::<4>, Const::<3>)).t();
            weigh(&a.cat_in(&a, Axis::<0>, Const::<6>).exp())
        },
    );
}

#[test]
fn select_rows_gradients() {
    let x = uniform(31, 15, -1.0, 1.0);
    // Repeated and missing rows, from the leaf and from a transposed view of it, and the table
    // read a second time beside the selection.
    gradcheck("select_rows", std::slice::from_ref(&x), |l| {
        weigh(
            &l.next((Const::<5>, Const::<3>))
                .select_rows(&[4, 0, 4, 4, 2])
                .unwrap()
                .tanh(),
        )
    });
    gradcheck("nll_loss of log_softmax", &[uniform(34, 12, -2.0, 2.0)], |l| {
        let labels = Labels::new(vec![2, 0, 3], Const::<3>).unwrap();
        let log_probs = l.next((Const::<3>, Const::<4>)).log_softmax::<Axis<1>>();
        teenygrad::tensor::nll_loss(&log_probs, &labels).unwrap()
    });
    gradcheck(
        "select_rows of a transposed view",
        std::slice::from_ref(&x),
        |l| {
            let table = l.next((Const::<3>, Const::<5>)).t();
            weigh(&table.select_rows(&[1, 1, 3]).unwrap().exp()) + weigh(&table.square())
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Tensors used more than once, and a small network

#[test]
fn reused_tensors_add_their_paths() {
    let x = uniform(60, 6, -1.5, 1.5);
    gradcheck("x * x", std::slice::from_ref(&x), |l| {
        let x = l.next((Const::<2>, Const::<3>));
        weigh(&(&x * &x))
    });
    gradcheck("x * x + x", std::slice::from_ref(&x), |l| {
        let x = l.next((Const::<2>, Const::<3>));
        weigh(&(&x * &x + &x))
    });
    gradcheck("x * x * x through clones", std::slice::from_ref(&x), |l| {
        let x = l.next((Const::<2>, Const::<3>));
        let (y, z) = (x.clone(), x.clone());
        weigh(&(x * y * z))
    });
    gradcheck(
        "residual x + f(x)",
        &[x.clone(), uniform(61, 9, -1.0, 1.0)],
        |l| {
            let x = l.next((Const::<2>, Const::<3>));
            let w = l.next((Const::<3>, Const::<3>));
            let h = &x + x.matmul(&w).tanh();
            let h = &h + h.matmul(&w).tanh(); // the same weights twice
            weigh(&h)
        },
    );
    gradcheck(
        "a sum and a max of the same tensor",
        std::slice::from_ref(&spaced(62, 6)),
        |l| {
            let x = l.next((Const::<2>, Const::<3>));
            weigh(&(x.sum::<Axis<1>>() * x.max::<Axis<1>>()))
        },
    );
}

#[test]
fn mlp_gradients() {
    // x[4, 5] (a run-time batch) @ W1[5, 6] + b1, relu, @ W2[6, 3] + b2, squared error, mean.
    let x = uniform(70, 20, -1.0, 1.0);
    let (w1, b1) = (uniform(71, 30, -0.8, 0.8), uniform(72, 6, -0.2, 0.2));
    let (w2, b2) = (uniform(73, 18, -0.8, 0.8), uniform(74, 3, -0.2, 0.2));
    let target = uniform(75, 12, -1.0, 1.0);
    let inputs = [w1, b1, w2, b2];
    let f = |l: &mut Leaves| {
        let w1 = l.next((Const::<5>, Const::<6>));
        let b1 = l.next((Const::<6>,));
        let w2 = l.next((Const::<6>, Const::<3>));
        let b2 = l.next((Const::<3>,));
        let x = Tensor::from_vec(x.clone(), (4usize, Const::<5>)).unwrap();
        let y = Tensor::from_vec(target.clone(), (4usize, Const::<3>)).unwrap();
        let hidden = (x.matmul(&w1) + &b1).relu();
        let out = hidden.matmul(&w2) + &b2;
        (out - &y).square().mean_all()
    };
    // relu's kink: no pre-activation may sit within h of 0 (for any perturbed input, the
    // pre-activations move by at most h·max|x| < 1e-3)
    let pre = {
        let mut l = Leaves {
            values: &inputs,
            readers: Vec::new(),
        };
        let w1 = l.next((Const::<5>, Const::<6>));
        let b1 = l.next((Const::<6>,));
        (Tensor::from_vec(x.clone(), (4usize, Const::<5>))
            .unwrap()
            .matmul(&w1)
            + &b1)
            .to_vec()
    };
    assert!(
        pre.iter().all(|p| p.abs() > 0.01),
        "pre-activations away from relu's kink: {pre:?}"
    );
    assert!(pre.iter().any(|&p| p < 0.0) && pre.iter().any(|&p| p > 0.0));
    gradcheck("mlp", &inputs, f);
}

// ---------------------------------------------------------------------------------------------
// Tie rules (documented in src/autograd/ops.rs): exact

#[test]
fn binary_max_and_min_ties_share_the_gradient() {
    let a = Tensor::from([1.0, 2.0, 5.0]).requires_grad();
    let b = Tensor::from([1.0, 3.0, 4.0]).requires_grad();
    a.maximum(&b).sum_all().backward();
    assert_eq!(a.grad().unwrap().to_array(), [0.5, 0.0, 1.0]);
    assert_eq!(b.grad().unwrap().to_array(), [0.5, 1.0, 0.0]);

    let a = Tensor::from([1.0, 2.0, 5.0]).requires_grad();
    let b = Tensor::from([1.0, 3.0, 4.0]).requires_grad();
    (a.minimum(&b) * 2.0).sum_all().backward();
    assert_eq!(a.grad().unwrap().to_array(), [1.0, 2.0, 0.0]);
    assert_eq!(b.grad().unwrap().to_array(), [1.0, 0.0, 2.0]);

    // a broadcast scalar tying with two elements: it collects half from each
    let x = Tensor::from([0.0, -1.0, 0.0, 2.0]).requires_grad();
    let zero = Tensor::from(0.0).requires_grad();
    x.maximum(&zero).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [0.5, 0.0, 0.5, 1.0]);
    assert_eq!(zero.grad().unwrap().item(), 0.5 + 1.0 + 0.5);
}

/// Each value's bits, so signed zeros and NaN payloads compare too.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The losing side of `maximum`/`minimum` gets +0.0 whatever the upstream gradient, as PyTorch's
/// (2.15 gives these values): an infinite or NaN gradient does not turn into NaN there, nor a
/// negative one into -0.0.
#[test]
fn binary_max_and_min_losers_get_plus_zero() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let a = Tensor::from([1.0, 3.0, 2.0]).requires_grad();
    let b = Tensor::from([2.0, 1.0, 2.0]).requires_grad();
    (a.maximum(&b) * Tensor::from([inf, nan, -4.0]))
        .sum_all()
        .backward();
    assert_eq!(bits(&a.grad_values().unwrap()), bits(&[0.0, nan, -2.0]));
    assert_eq!(bits(&b.grad_values().unwrap()), bits(&[inf, 0.0, -2.0]));
    let a = Tensor::from([1.0, 3.0, 2.0]).requires_grad();
    let b = Tensor::from([2.0, 1.0, 2.0]).requires_grad();
    (a.minimum(&b) * Tensor::from([-3.0, -3.0, -4.0]))
        .sum_all()
        .backward();
    assert_eq!(bits(&a.grad_values().unwrap()), bits(&[-3.0, 0.0, -2.0]));
    assert_eq!(bits(&b.grad_values().unwrap()), bits(&[0.0, -3.0, -2.0]));
}

#[test]
fn max_and_min_reductions_split_among_tied_extremes() {
    let x = Tensor::from([3.0, 1.0, 3.0, 2.0]).requires_grad();
    x.max_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [0.5, 0.0, 0.5, 0.0]);

    let m = Tensor::from([[1.0, 5.0, 5.0], [2.0, 2.0, 2.0], [7.0, 0.0, 1.0]]).requires_grad();
    let w = Tensor::from([1.0, 3.0, 6.0]);
    (m.max::<Axis<1>>() * &w).sum_all().backward();
    assert_eq!(
        m.grad().unwrap().to_array(),
        [[0.0, 0.5, 0.5], [1.0, 1.0, 1.0], [6.0, 0.0, 0.0]]
    );

    let m = Tensor::from([[1.0, 5.0, 1.0], [1.0, 2.0, 0.0]]).requires_grad();
    m.min::<Axis<0>>().sum_all().backward();
    assert_eq!(m.grad().unwrap().to_array(), [[0.5, 0.0, 0.0], [0.5, 1.0, 1.0]]);

    let m = Tensor::from([[4.0, 4.0], [4.0, 9.0]]).requires_grad();
    m.min_all().backward();
    let third = 1.0 / 3.0;
    assert_eq!(m.grad().unwrap().to_array(), [[third, third], [third, 0.0]]);
}

#[test]
fn relu_and_abs_have_gradient_zero_at_zero() {
    let x = Tensor::from([0.0, -1.5, 2.0, -0.0]).requires_grad();
    x.relu().sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [0.0, 0.0, 1.0, 0.0]);
    let x = Tensor::from([0.0, -1.5, 2.0, -0.0]).requires_grad();
    x.abs().sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [0.0, -1.0, 1.0, 0.0]);
}

/// PyTorch's relu gradient, `where(y <= 0, 0, g)`, bit for bit (PyTorch 2.15 gives these values):
/// `+0.0` where the unit is off, even where the upstream gradient is infinite, NaN or negative (a
/// product by the mask gave NaN and -0.0 there), and the upstream gradient where `x` is NaN. Both
/// as a kernel of its own and as a product's epilogue (the gradient through the next layer).
#[test]
fn relu_gradient_is_torchs_at_specials() {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let xs = [nan, -1.0, -0.0, 0.0, 2.0, inf, -inf];
    let ups = [5.0, inf, nan, -3.0, -3.0, 2.0, -inf];
    let want = [5.0f32, 0.0, 0.0, 0.0, -3.0, 2.0, 0.0];
    let x = Tensor::from(xs).requires_grad();
    (x.relu() * Tensor::from(ups)).sum_all().backward();
    assert_eq!(bits(&x.grad_values().unwrap()), bits(&want));
    // `h = relu(x)` feeds `h·w`, whose gradient `g·wᵀ` the mask follows: each row of `g·wᵀ` is
    // `ups`, with `g` a column of ones and `w` one column. Unrealized, the mask's kernel
    // recomputes `h` from `x`; realized first, it reads `h` and runs as the product's epilogue
    // (`TEENYGRAD_DEBUG=1` shows `then [CmpLe Where]`).
    for realized in [false, true] {
        let x = Tensor::<Rank2<2, 7>>::from([xs, xs]).requires_grad();
        let w = Tensor::<Rank2<7, 1>>::from(ups.map(|u| [u]));
        let h = if realized { x.relu().realize() } else { x.relu() };
        h.matmul(&w).sum_all().backward();
        let grad = x.grad_values().unwrap();
        assert_eq!(bits(&grad[..7]), bits(&want), "h realized first: {realized}");
        assert_eq!(bits(&grad[7..]), bits(&want), "h realized first: {realized}");
    }
}

#[test]
fn pow_gradients_at_a_zero_base_or_exponent_are_zero_not_nan() {
    // d/db 0^b = 0 for b ≥ 0 (0^b is constant 0 there, and 0^0 = 1 is taken so too, as PyTorch
    // does); d/da a^0 = 0 (a^0 is constant 1). With b < 0, 0^b is ±∞ and so is d/db, y·ln a:
    // PyTorch 2.5.1 gives these same values.
    let a = Tensor::from([0.0, 0.0, 2.0, 3.0, 0.0, 0.0, -0.0]).requires_grad();
    let b = Tensor::from([2.0, 0.5, 0.0, 1.0, 0.0, -1.0, -1.0]).requires_grad();
    a.pow(&b).sum_all().backward();
    let (inf, ln3) = (f32::INFINITY, 3.0f32.ln());
    assert_eq!(
        a.grad().unwrap().to_array(),
        [0.0, inf, 0.0, 1.0, 0.0, -inf, -inf]
    );
    assert_eq!(
        b.grad().unwrap().to_array(),
        [0.0, 0.0, 2.0f32.ln(), 3.0 * ln3, 0.0, -inf, inf]
    );
}

/// `powf`'s gradient is PyTorch's `g·(e·x^(e−1))` at zeros of both signs, infinities and
/// negatives too, for the exponents computed by formula and others: the table is PyTorch 2.5.1's
/// `x.pow(e).sum().backward()` on these inputs.
#[test]
fn powf_gradients_at_zeros_and_infinities_match_pytorch() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let x = [0.0, -0.0, inf, -inf, 2.0, -3.0];
    let cases: [(f32, [f32; 6]); 9] = [
        (2.0, [0.0, -0.0, inf, -inf, 4.0, -6.0]),
        (3.0, [0.0, 0.0, inf, inf, 12.0, 27.0]),
        (-2.0, [-inf, inf, -0.0, 0.0, -0.25, 2.0 / 27.0]),
        (0.5, [inf, -inf, 0.0, nan, 0.5 / 2f32.sqrt(), nan]),
        (-0.5, [-inf, -inf, -0.0, -0.0, -0.5 * 2f32.powf(-1.5), nan]),
        (-1.0, [-inf, -inf, -0.0, -0.0, -0.25, -1.0 / 9.0]),
        (0.0, [0.0; 6]),
        (2.5, [0.0, 0.0, inf, inf, 2.5 * 2f32.powf(1.5), nan]),
        (1.0, [1.0; 6]),
    ];
    for (e, want) in cases {
        let t = Tensor::from(x).requires_grad();
        t.powf(e).sum_all().backward();
        let got = t.grad().unwrap().to_array();
        for i in 0..x.len() {
            let same = got[i].to_bits() == want[i].to_bits() || (got[i].is_nan() && want[i].is_nan());
            assert!(same, "d/dx {}^{e} = {} against {}", x[i], got[i], want[i]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-computed cases

#[test]
fn d_dx_of_x_squared_plus_x_is_2x_plus_1() {
    for x0 in [-2.0f32, -0.5, 0.0, 1.0, 3.25] {
        let x = Tensor::from(x0).requires_grad();
        (&x * &x + &x).backward();
        assert_eq!(x.grad().unwrap().item(), 2.0 * x0 + 1.0, "at x = {x0}");
    }
    let x = Tensor::from([-2.0, -0.5, 0.0, 1.0, 3.25]).requires_grad();
    (&x * &x + &x).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [-3.0, 0.0, 1.0, 3.0, 7.5]);
}

#[test]
fn a_bias_broadcast_over_a_batch_gets_the_batch_size() {
    for batch in [1usize, 5, 32] {
        let x = Tensor::randn_in((batch, Const::<3>), &mut rng(80));
        let bias = Tensor::from([0.1, 0.2, 0.3]).requires_grad();
        (&x + &bias).sum_all().backward();
        assert_eq!(
            bias.grad().unwrap().to_array(),
            [batch as f32; 3],
            "batch {batch}"
        );
    }
    // and an empty batch contributes nothing
    let x = Tensor::zeros_in((0usize, Const::<3>));
    let bias = Tensor::from([0.1, 0.2, 0.3]).requires_grad();
    (&x + &bias).sum_all().backward();
    assert_eq!(bias.grad().unwrap().to_array(), [0.0; 3]);
}

#[test]
fn gradients_accumulate_until_zero_grad() {
    let w = Tensor::from([1.0, -2.0]).requires_grad();
    let loss = |w: &Tensor<R1<2>, Tracked>| (w * 3.0).sum_all();
    assert!(w.grad().is_none(), "no gradient before backward");
    loss(&w).backward();
    assert_eq!(w.grad().unwrap().to_array(), [3.0, 3.0]);
    loss(&w).backward();
    assert_eq!(
        w.grad().unwrap().to_array(),
        [6.0, 6.0],
        "a second forward and backward adds"
    );
    w.square().sum_all().backward();
    assert_eq!(w.grad().unwrap().to_array(), [8.0, 2.0], "another loss adds too");
    w.zero_grad();
    assert!(w.grad().is_none(), "zero_grad clears");
    loss(&w).backward();
    assert_eq!(
        w.grad().unwrap().to_array(),
        [3.0, 3.0],
        "and accumulation starts again"
    );
    // a clone is the same leaf
    let alias = w.clone();
    alias.zero_grad();
    assert!(w.grad().is_none());
}

#[test]
fn leaves_a_loss_does_not_use_get_no_gradient() {
    let used = Tensor::from([1.0, 2.0]).requires_grad();
    let unused = Tensor::from([3.0]).requires_grad();
    let _ = unused.exp(); // recorded, but not part of the loss
    used.sum_all().backward();
    assert!(unused.grad().is_none());
    // a scalar leaf is its own loss: d x / d x = 1
    let s = Tensor::from(4.0).requires_grad();
    s.backward();
    assert_eq!(s.grad().unwrap().item(), 1.0);
}

#[test]
fn detach_stops_the_gradient() {
    let x = Tensor::from([1.0, 2.0, -3.0]).requires_grad();
    // d/dx [stop(x)·x] = stop(x) = x, not 2x
    (x.detach() * &x).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [1.0, 2.0, -3.0]);

    let x = Tensor::from([1.0, 2.0]).requires_grad();
    let y = x.exp();
    let frozen: Tensor<R1<2>> = y.detach(); // an untracked tensor, by type
    (&frozen * 5.0 + &x).sum_all().backward();
    assert_eq!(
        x.grad().unwrap().to_array(),
        [1.0, 1.0],
        "only the direct path counts"
    );

    // comparisons are untracked too: a mask passes no gradient
    let x = Tensor::from([1.0, -2.0]).requires_grad();
    let mask: Tensor<R1<2>> = x.gt(&Tensor::from(0.0));
    (&x * &mask).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [1.0, 0.0]);
}

/// Accepts only tracked tensors: a compile-time check of the result mode.
fn tracked<S: Shape>(t: &Tensor<S, Tracked>) -> Vec<usize> {
    t.dims()
}

/// Accepts only untracked tensors.
fn untracked<S: Shape>(t: &Tensor<S, NoGrad>) -> Vec<usize> {
    t.dims()
}

#[test]
fn tracked_with_untracked_gives_tracked() {
    let w = Tensor::from([[1.0, 2.0], [3.0, 4.0]]).requires_grad();
    let x = Tensor::from([[0.5, -1.0], [2.0, 0.0]]);
    let c = Tensor::from([1.0, 1.0]);
    tracked(&(&w + &x));
    tracked(&(&x + &w));
    tracked(&(&x * &w));
    tracked(&x.sub(&w));
    tracked(&x.maximum(&w));
    tracked(&x.matmul(&w));
    tracked(&w.matmul(&c));
    tracked(&c.matmul(&w));
    tracked(&x.where_else(&x.gt(&w), &w));
    tracked(&w.where_else(&x, &x));
    tracked(&(2.0 * &w));
    untracked(&(&x + &x));
    untracked(&x.matmul(&c));
    untracked(&w.lt(&x));
    untracked(&w.detach());
    untracked(&w.grad().unwrap_or_else(|| w.zeros_like()));
    // the gradient reaches the tracked side through each
    let loss = (&x * &w).sum_all() + x.matmul(&w).sum_all() + c.matmul(&w).sum_all();
    loss.backward();
    // d/dw Σ x⊙w = x; d/dw Σ xw = xᵀ1 (column sums of x per row k); d/dw Σ cᵀw = c per column
    assert_eq!(
        w.grad().unwrap().to_array(),
        [
            [0.5 + 2.5 + 1.0, -1.0 + 2.5 + 1.0],
            [2.0 - 1.0 + 1.0, 0.0 - 1.0 + 1.0]
        ]
    );
}

#[test]
#[should_panic(expected = "backward through a graph whose backward already ran")]
fn backward_twice_through_the_same_graph_panics() {
    let x = Tensor::from([1.0, 2.0]).requires_grad();
    let loss = x.exp().sum_all();
    loss.backward();
    loss.backward();
}

#[test]
#[should_panic(expected = "backward through a graph whose backward already ran")]
fn backward_through_a_shared_consumed_subgraph_panics() {
    let x = Tensor::from([1.0, 2.0]).requires_grad();
    let h = x.exp();
    h.sum_all().backward();
    (&h * 2.0).sum_all().backward();
}

/// The panic comes before any gradient changes: found midway, the leaves reached first (`u`,
/// whose branch the pass visits before `h`'s) kept their share, and the recomputed backward
/// the message asks for then added it twice. And it leaves the graph as it found it: the rules
/// taken before the consumed one was found (`tripled`'s) are given back.
#[test]
fn a_backward_that_panics_changes_no_gradient_and_leaves_the_graph_whole() {
    let w = Tensor::from([1.0, 2.0]).requires_grad();
    let v = Tensor::from([3.0, 4.0]).requires_grad();
    let u = Tensor::from([5.0, 6.0]).requires_grad();
    let h = w.exp();
    h.sum_all().backward();
    let w_grad = w.grad_values();
    let tripled = &v * 3.0;
    let loss = tripled.sum_all() + h.sum_all() + (&u * 2.0).sum_all();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loss.backward())).is_err();
    assert!(panicked);
    assert_eq!(w.grad_values(), w_grad);
    assert_eq!((v.grad_values(), u.grad_values()), (None, None));
    tripled.sum_all().backward();
    assert_eq!(v.grad_values(), Some(vec![3.0, 3.0]));
    (&w.exp() + &u).sum_all().backward();
    assert_eq!(u.grad_values(), Some(vec![1.0, 1.0]));
}
