//! The forward pass of every `Tensor` operation, checked three ways on seeded random inputs: the
//! fast path (fused f32 kernels) against the reference evaluator of the same lazy graph (f64, plain
//! loops), and both against values computed independently here from the input data.
//!
//! The reference is evaluated *before* the tensor is read: reading realizes the node, and a
//! realized node drops its inputs, after which the reference would only see the stored buffer.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::lazy::reference;
use teenygrad::prelude::*;
use teenygrad::shape::{BroadcastShape, MatMulShape};

// ---------------------------------------------------------------------------------------------
// Helpers

fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `n` values uniform in `[lo, hi)`.
fn data(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// A tensor of `shape` holding `values`.
fn tensor<S: Shape>(values: &[f32], shape: S) -> Tensor<S> {
    Tensor::from_vec(values.to_vec(), shape).expect("test data fits its shape")
}

/// Row-major multi-indices of `dims`.
fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = dims.iter().product();
    (0..n)
        .map(|mut linear| {
            let mut index = vec![0; dims.len()];
            for d in (0..dims.len()).rev() {
                index[d] = linear % dims[d];
                linear /= dims[d];
            }
            index
        })
        .collect()
}

/// The row-major offset of `index` in `dims`.
fn offset(dims: &[usize], index: &[usize]) -> usize {
    index.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// `values` (shape `dims`) read at `out`, an index of a broadcast result: trailing dims aligned,
/// size-1 dims read at 0.
fn at_broadcast(values: &[f32], dims: &[usize], out: &[usize]) -> f64 {
    let lead = out.len() - dims.len();
    let index: Vec<usize> = dims
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { 0 } else { out[lead + d] })
        .collect();
    values[offset(dims, &index)] as f64
}

/// The numpy broadcast of two shapes (the tests only build valid ones).
fn broadcast_dims(a: &[usize], b: &[usize]) -> Vec<usize> {
    let rank = a.len().max(b.len());
    let get = |s: &[usize], i: usize| {
        if i < rank - s.len() {
            1
        } else {
            s[i - (rank - s.len())]
        }
    };
    (0..rank)
        .map(|i| get(a, i).max(get(b, i)) * usize::from(get(a, i) != 0 && get(b, i) != 0))
        .collect()
}

/// Equal within `tol` relative to `1 + |want|`; NaNs match NaNs and infinities match themselves.
fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tol * (1.0 + want.abs())
}

/// The fast path's values agree with the reference evaluator of the same graph within `tol` (the
/// fast path runs in f32), and the reference agrees with `expected` (computed here in f64 from the
/// same f32 inputs) to within f64 rounding.
#[track_caller]
fn check<S: Shape, G: GradMode>(t: &Tensor<S, G>, dims: &[usize], expected: &[f64], tol: f64) {
    assert_eq!(t.dims(), dims, "shape");
    assert_eq!(t.numel(), expected.len(), "element count");
    let reference = reference::evaluate(&t.lazy());
    let fast = t.to_vec();
    assert_eq!(reference.len(), expected.len());
    assert_eq!(fast.len(), expected.len());
    for i in 0..expected.len() {
        assert!(
            close(reference[i], expected[i], 1e-9),
            "element {i} of {dims:?}: reference {} but expected {}",
            reference[i],
            expected[i]
        );
        assert!(
            close(fast[i] as f64, reference[i], tol),
            "element {i} of {dims:?}: fast path {} but reference {}",
            fast[i],
            reference[i]
        );
    }
}

/// Elementwise ops round once per op in f32 (libm-quality transcendental functions add an ulp or
/// two): a few units of 2⁻²⁴ relative, well inside 1e-6.
const ELEMENTWISE_TOL: f64 = 1e-6;
/// Sums of up to ~64 terms of magnitude ≲ 1 accumulate at most K·2⁻²⁴·Σ|terms| ≈ 2.5e-5 in f32
/// (pairwise or blocked summation does much better); 3e-5 relative to `1 + |sum|` bounds it.
const SUM_TOL: f64 = 3e-5;

// ---------------------------------------------------------------------------------------------
// Creation

#[test]
fn creation_from_arrays_infers_the_shape() {
    let s: Tensor<()> = Tensor::from(2.5);
    assert_eq!((s.dims(), s.item()), (vec![], 2.5));
    let v: Tensor<Rank1<3>> = Tensor::from([1.0, 2.0, 3.0]);
    assert_eq!(v.to_array(), [1.0, 2.0, 3.0]);
    let m: Tensor<Rank2<2, 3>> = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    assert_eq!(m.to_array(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let c: Tensor<Rank3<2, 1, 2>> = Tensor::from([[[1.0, 2.0]], [[3.0, 4.0]]]);
    assert_eq!(c.to_array(), [[[1.0, 2.0]], [[3.0, 4.0]]]);
    let q: Tensor<Rank4<1, 2, 1, 2>> = Tensor::from([[[[1.0, 2.0]], [[3.0, 4.0]]]]);
    assert_eq!(
        (q.dims(), q.to_vec()),
        (vec![1, 2, 1, 2], vec![1.0, 2.0, 3.0, 4.0])
    );
    check(&m, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0.0);
}

#[test]
fn from_vec_checks_the_length_and_accepts_runtime_and_zero_dims() {
    let t = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], (3usize, Const::<2>)).unwrap();
    assert_eq!((t.dims(), t.numel()), (vec![3, 2], 6));
    let err = Tensor::from_vec(vec![0.0; 5], (3usize, Const::<2>)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LengthMismatch {
                expected: 6,
                got: 5,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("[3, 2]"),
        "the message names the shape: {err}"
    );
    let empty = Tensor::from_vec(vec![], (0usize, Const::<4>)).unwrap();
    assert_eq!((empty.dims(), empty.to_vec()), (vec![0, 4], vec![]));
    assert!(Tensor::from_vec(vec![1.0], (0usize, Const::<4>)).is_err());
    let one = Tensor::from_vec(vec![7.0], (One, 1usize, Const::<1>)).unwrap();
    assert_eq!(one.to_vec(), vec![7.0]);
}

#[test]
fn constants_ranges_and_identities() {
    check(&Tensor::<Rank2<2, 3>>::full(1.5), &[2, 3], &[1.5; 6], 0.0);
    check(&Tensor::<Rank1<4>>::zeros(), &[4], &[0.0; 4], 0.0);
    check(&Tensor::<Rank3<1, 2, 2>>::ones(), &[1, 2, 2], &[1.0; 4], 0.0);
    check(&Tensor::full_in((3usize, One), -2.0), &[3, 1], &[-2.0; 3], 0.0);
    check(&Tensor::zeros_in((2usize,)), &[2], &[0.0; 2], 0.0);
    check(&Tensor::ones_in((Const::<2>, 2usize)), &[2, 2], &[1.0; 4], 0.0);
    check(&Tensor::zeros_in((0usize, Const::<3>)), &[0, 3], &[], 0.0);
    check(
        &Tensor::<Rank1<5>>::arange(),
        &[5],
        &[0.0, 1.0, 2.0, 3.0, 4.0],
        0.0,
    );
    check(
        &Tensor::<Rank2<3, 3>>::eye(),
        &[3, 3],
        &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        0.0,
    );
    let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], (3usize,)).unwrap();
    check(&x.zeros_like(), &[3], &[0.0; 3], 0.0);
    check(&x.ones_like(), &[3], &[1.0; 3], 0.0);
    check(&x.requires_grad().full_like(4.0), &[3], &[4.0; 3], 0.0);
}

#[test]
fn random_fills_follow_the_callers_seed() {
    let a = Tensor::<Rank2<4, 8>>::rand(&mut rng(7)).to_vec();
    assert_eq!(
        a,
        Tensor::<Rank2<4, 8>>::rand(&mut rng(7)).to_vec(),
        "same seed, same values"
    );
    assert_ne!(
        a,
        Tensor::<Rank2<4, 8>>::rand(&mut rng(8)).to_vec(),
        "another seed, other values"
    );
    assert!(a.iter().all(|x| (0.0..1.0).contains(x)));

    let r = Tensor::rand_in((5usize, Const::<3>), &mut rng(1));
    assert_eq!(r.dims(), vec![5, 3]);
    let u = Tensor::uniform_in((1000usize,), -3.0, -2.0, &mut rng(2)).to_vec();
    assert!(u.iter().all(|x| (-3.0..-2.0).contains(x)));

    // 4096 standard normals: the sample mean has standard error 1/64, the sample variance ≈ 0.022.
    let n = Tensor::<Rank1<4096>>::randn(&mut rng(3)).to_vec();
    let mean = n.iter().map(|&x| x as f64).sum::<f64>() / 4096.0;
    let var = n.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 4096.0;
    assert!(
        mean.abs() < 0.08 && (var - 1.0).abs() < 0.11,
        "mean {mean}, var {var}"
    );
    let m = Tensor::randn_in((3usize, Const::<2>), &mut rng(3)).to_vec();
    assert_eq!(m, n[..6], "randn_in draws the same stream as randn");
}

/// A generator whose every draw is the largest: `random::<f32>()` gives `1 - 2^-24`.
struct Highest;

impl rand::RngCore for Highest {
    fn next_u32(&mut self) -> u32 {
        u32::MAX
    }
    fn next_u64(&mut self) -> u64 {
        u64::MAX
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        dst.fill(u8::MAX);
    }
}

#[test]
fn uniform_samples_stay_below_high() {
    // 10 + (1 - 2^-24) rounds to 11 in f32 (its spacing there is 2^-20): the largest draw must
    // still land below 11, on the largest f32 below it.
    let u = Tensor::uniform_in((3usize,), 10.0, 11.0, &mut Highest).to_vec();
    assert_eq!(u, [11f32.next_down(); 3]);
    // Where the largest draw does not round up, it is left as it is.
    let u = Tensor::uniform_in((1usize,), 0.0, 1.0, &mut Highest).to_vec();
    assert_eq!(u, [1.0 - f32::EPSILON / 2.0]);
    // An empty range gives its one value.
    assert_eq!(
        Tensor::uniform_in((2usize,), 3.0, 3.0, &mut rng(0)).to_vec(),
        [3.0; 2]
    );
    for (low, high) in [
        (1.0, -1.0),
        (0.0, f32::INFINITY),
        (f32::NAN, 1.0),
        (-f32::MAX, f32::MAX),
    ] {
        let err = Tensor::try_uniform_in((2usize,), low, high, &mut rng(0)).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { op: "uniform_in", .. }),
            "[{low}, {high}): {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Unary

type Batch4 = (usize, Const<4>);
type UnaryCase = (
    &'static str,
    fn(&Tensor<Batch4>) -> Tensor<Batch4>,
    fn(f64) -> f64,
    (f32, f32),
);

#[test]
fn unary_math_matches_f64() {
    let cases: [UnaryCase; 16] = [
        ("neg", |t| t.neg(), |x| -x, (-3.0, 3.0)),
        ("-t", |t| -t, |x| -x, (-3.0, 3.0)),
        ("-owned", |t| -(t.clone()), |x| -x, (-3.0, 3.0)),
        ("exp", |t| t.exp(), f64::exp, (-4.0, 4.0)),
        ("log", |t| t.log(), f64::ln, (0.01, 10.0)),
        ("sqrt", |t| t.sqrt(), f64::sqrt, (0.0, 10.0)),
        ("recip", |t| t.recip(), |x| 1.0 / x, (0.1, 5.0)),
        ("sin", |t| t.sin(), f64::sin, (-6.0, 6.0)),
        ("cos", |t| t.cos(), f64::cos, (-6.0, 6.0)),
        ("abs", |t| t.abs(), f64::abs, (-3.0, 3.0)),
        ("tanh", |t| t.tanh(), f64::tanh, (-4.0, 4.0)),
        (
            "sigmoid",
            |t| t.sigmoid(),
            |x| 1.0 / (1.0 + (-x).exp()),
            (-8.0, 8.0),
        ),
        ("relu", |t| t.relu(), |x| x.max(0.0), (-3.0, 3.0)),
        ("square", |t| t.square(), |x| x * x, (-3.0, 3.0)),
        ("powf", |t| t.powf(2.5), |x| x.powf(2.5), (0.0, 3.0)),
        ("powf odd", |t| t.powf(3.0), |x| x.powi(3), (-2.0, 2.0)),
    ];
    for (i, (name, op, f, (lo, hi))) in cases.into_iter().enumerate() {
        for batch in [3usize, 1, 0] {
            let x = data(&mut rng(100 + i as u64), batch * 4, lo, hi);
            let t = tensor(&x, (batch, Const::<4>));
            let expected: Vec<f64> = x.iter().map(|&v| f(v as f64)).collect();
            let y = op(&t);
            assert_eq!(y.dims(), vec![batch, 4], "{name}");
            // ulp-level relative error, except that exp/square/powf grow values to ~60:
            check(&y, &[batch, 4], &expected, ELEMENTWISE_TOL);
        }
    }
    // The documented IEEE edge values.
    let edge = Tensor::from([0.0, -1.0]);
    assert_eq!(edge.log().to_vec()[0], f32::NEG_INFINITY);
    assert!(edge.log().to_vec()[1].is_nan() && edge.sqrt().to_vec()[1].is_nan());
    assert_eq!(edge.recip().to_vec()[0], f32::INFINITY);
}

/// `powf`'s special exponents are their formulas (`x·x`, `√x`, ...), bit for bit, and so give
/// PyTorch's values at signed zeros, infinities, NaN, negatives and a subnormal: the table is
/// PyTorch 2.5.1's `x.pow(e)` on these inputs.
#[test]
fn powf_special_exponents_are_their_formulas_and_match_pytorch() {
    let (inf, nan) = (f32::INFINITY, f32::NAN);
    let x = [-0.0, 0.0, -inf, inf, nan, -2.0, 3.0, 1e-45];
    let third = 1.0f32 / 3.0;
    let cases: [(f32, [f32; 8]); 6] = [
        (2.0, [0.0, 0.0, inf, inf, nan, 4.0, 9.0, 0.0]),
        (3.0, [-0.0, 0.0, -inf, inf, nan, -8.0, 27.0, 0.0]),
        (-2.0, [inf, inf, 0.0, 0.0, nan, 0.25, 1.0 / 9.0, inf]),
        (0.5, [-0.0, 0.0, nan, inf, nan, nan, 3f32.sqrt(), 1e-45f32.sqrt()]),
        (
            -0.5,
            [
                -inf,
                inf,
                nan,
                0.0,
                nan,
                nan,
                1.0 / 3f32.sqrt(),
                1.0 / 1e-45f32.sqrt(),
            ],
        ),
        (-1.0, [-inf, inf, -0.0, 0.0, nan, -0.5, third, inf]),
    ];
    let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    for (e, want) in cases {
        let got = Tensor::from(x).powf(e).to_array();
        for i in 0..x.len() {
            assert!(
                same(got[i], want[i]),
                "{}^{e}: {} against {}",
                x[i],
                got[i],
                want[i]
            );
        }
    }
    // 1 and 0 give `x` and ones, as libm's powf does (NaN^0 is 1).
    assert_eq!(
        Tensor::from(x).powf(1.0).to_array().map(f32::to_bits),
        x.map(f32::to_bits)
    );
    assert_eq!(Tensor::from(x).powf(0.0).to_array(), [1.0; 8]);
    // Other exponents stay libm's powf, element by element.
    let got = Tensor::from(x).powf(2.5).to_array();
    for i in 0..x.len() {
        assert!(same(got[i], x[i].powf(2.5)), "{}^2.5", x[i]);
    }
}

// ---------------------------------------------------------------------------------------------
// Binary, broadcasting

type BinaryCase = (&'static str, fn(f64, f64) -> f64);

const BINARY: [BinaryCase; 7] = [
    ("add", |a, b| a + b),
    ("sub", |a, b| a - b),
    ("mul", |a, b| a * b),
    ("div", |a, b| a / b),
    ("maximum", f64::max),
    ("minimum", f64::min),
    ("pow", f64::powf),
];

/// Every broadcasting binary op, as a method, as its `try_` form and (for `+ - * /`) as each of the
/// four operator forms, on `a` of shape `sa` and `b` of shape `sb`. `a` is positive (for `pow`), `b`
/// is kept away from 0 (for `div`).
fn binary_ops<SA, SB>(sa: SA, sb: SB, seed: u64)
where
    SA: Shape + BroadcastShape<SB>,
    SB: Shape,
{
    let (da, db) = (sa.dims(), sb.dims());
    let out = broadcast_dims(&da, &db);
    let mut r = rng(seed);
    let x = data(&mut r, sa.numel(), 0.2, 2.0);
    let y: Vec<f32> = data(&mut r, sb.numel(), 0.3, 2.0)
        .iter()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 0 { v } else { -v })
        .collect();
    let (a, b) = (tensor(&x, sa), tensor(&y, sb));
    for (name, f) in BINARY {
        let expected: Vec<f64> = indices(&out)
            .iter()
            .map(|i| f(at_broadcast(&x, &da, i), at_broadcast(&y, &db, i)))
            .collect();
        let method = match name {
            "add" => a.add(&b),
            "sub" => a.sub(&b),
            "mul" => a.mul(&b),
            "div" => a.div(&b),
            "maximum" => a.maximum(&b),
            "minimum" => a.minimum(&b),
            _ => a.pow(&b),
        };
        check(&method, &out, &expected, ELEMENTWISE_TOL);
        let tried = match name {
            "add" => a.try_add(&b),
            "sub" => a.try_sub(&b),
            "mul" => a.try_mul(&b),
            "div" => a.try_div(&b),
            "maximum" => a.try_maximum(&b),
            "minimum" => a.try_minimum(&b),
            _ => a.try_pow(&b),
        };
        check(&tried.unwrap(), &out, &expected, ELEMENTWISE_TOL);
        let operators = match name {
            "add" => vec![&a + &b, a.clone() + b.clone(), a.clone() + &b, &a + b.clone()],
            "sub" => vec![&a - &b, a.clone() - b.clone(), a.clone() - &b, &a - b.clone()],
            "mul" => vec![&a * &b, a.clone() * b.clone(), a.clone() * &b, &a * b.clone()],
            "div" => vec![&a / &b, a.clone() / b.clone(), a.clone() / &b, &a / b.clone()],
            _ => vec![],
        };
        for t in &operators {
            check(t, &out, &expected, ELEMENTWISE_TOL);
        }
    }
}

#[test]
fn binary_ops_broadcast_like_numpy() {
    // a runtime batch against a row (a bias), both ways round
    binary_ops((5usize, Const::<4>), (Const::<4>,), 1);
    binary_ops((Const::<4>,), (5usize, Const::<4>), 2);
    // `One` stretches on either side, in the middle, with a missing leading dim
    binary_ops((Const::<2>, One, Const::<4>), (Const::<3>, One), 3);
    binary_ops((Const::<3>, One), (One, Const::<4>), 4);
    binary_ops((3usize, One, Const::<2>), (3usize, Const::<5>, One), 5);
    // a scalar against anything
    binary_ops((), (2usize, Const::<3>), 6);
    binary_ops((Const::<2>, Const::<3>), (), 7);
    // same shapes, size-1 and zero-size dims
    binary_ops((Const::<1>, 1usize), (Const::<1>, 1usize), 8);
    binary_ops((0usize, Const::<4>), (Const::<4>,), 9);
    binary_ops((0usize, One), (One, Const::<3>), 10);
}

#[test]
fn scalar_operands_on_either_side() {
    let x = data(&mut rng(11), 8, 0.5, 2.0);
    let t = tensor(&x, (2usize, Const::<4>));
    let c = 1.75f32;
    type ScalarCase = (Tensor<Batch4>, fn(f64, f64) -> f64);
    let cases: Vec<ScalarCase> = vec![
        (&t + c, |x, c| x + c),
        (t.clone() + c, |x, c| x + c),
        (c + &t, |x, c| c + x),
        (c + t.clone(), |x, c| c + x),
        (&t - c, |x, c| x - c),
        (t.clone() - c, |x, c| x - c),
        (c - &t, |x, c| c - x),
        (c - t.clone(), |x, c| c - x),
        (&t * c, |x, c| x * c),
        (t.clone() * c, |x, c| x * c),
        (c * &t, |x, c| c * x),
        (c * t.clone(), |x, c| c * x),
        (&t / c, |x, c| x / c),
        (t.clone() / c, |x, c| x / c),
        (c / &t, |x, c| c / x),
        (c / t.clone(), |x, c| c / x),
    ];
    for (y, f) in &cases {
        let expected: Vec<f64> = x.iter().map(|&v| f(v as f64, c as f64)).collect();
        check(y, &[2, 4], &expected, ELEMENTWISE_TOL);
    }
    // A tracked tensor keeps its mode through scalar operators.
    let w = t.requires_grad();
    let tracked: Tensor<(usize, Const<4>), Tracked> = 2.0 * &w - 1.0;
    assert_eq!(tracked.dims(), vec![2, 4]);
}

// ---------------------------------------------------------------------------------------------
// Comparisons and where

#[test]
fn comparisons_broadcast_and_give_untracked_masks() {
    // Small integers, so that equal pairs occur.
    let mut r = rng(12);
    let x: Vec<f32> = (0..12).map(|_| r.random_range(0..3) as f32).collect();
    let y: Vec<f32> = (0..4).map(|_| r.random_range(0..3) as f32).collect();
    let a = tensor(&x, (3usize, Const::<4>)).requires_grad();
    let b = tensor(&y, (Const::<4>,));
    type Cmp = fn(f64, f64) -> bool;
    let cases: [(Tensor<(usize, Const<4>)>, Cmp); 5] = [
        (a.lt(&b), |p, q| p < q),
        (a.le(&b), |p, q| p <= q),
        (a.gt(&b), |p, q| p > q),
        (a.ge(&b), |p, q| p >= q),
        (a.eq(&b), |p, q| p == q),
    ];
    for (mask, f) in &cases {
        let expected: Vec<f64> = indices(&[3, 4])
            .iter()
            .map(|i| {
                f64::from(u8::from(f(
                    at_broadcast(&x, &[3, 4], i),
                    at_broadcast(&y, &[4], i),
                )))
            })
            .collect();
        check(mask, &[3, 4], &expected, 0.0);
    }
    assert!(
        x.iter().zip(y.iter().cycle()).any(|(p, q)| p == q),
        "the data has ties"
    );
    // Reversed broadcast direction, and NaN compares false.
    let rev = b.lt(&tensor(&x, (3usize, Const::<4>)));
    let expected: Vec<f64> = indices(&[3, 4])
        .iter()
        .map(|i| f64::from(u8::from(y[i[1]] < x[i[0] * 4 + i[1]])))
        .collect();
    check(&rev, &[3, 4], &expected, 0.0);
    let nan = Tensor::from([f32::NAN, 1.0]);
    assert_eq!(nan.lt(&Tensor::from(2.0)).to_vec(), vec![0.0, 1.0]);
    assert_eq!(nan.eq(&nan).to_vec(), vec![0.0, 1.0]);
}

#[test]
fn where_else_picks_by_any_nonzero_condition() {
    let mut r = rng(13);
    let x = data(&mut r, 15, -1.0, 1.0);
    let y = data(&mut r, 15, -1.0, 1.0);
    let c: Vec<f32> = (0..15).map(|i| [0.0, 1.0, -2.0, 0.5, 0.0][i % 5]).collect();
    let s = (5usize, Const::<3>);
    let picked = tensor(&x, s).where_else(&tensor(&c, s), &tensor(&y, s));
    let expected: Vec<f64> = (0..15)
        .map(|i| if c[i] != 0.0 { x[i] as f64 } else { y[i] as f64 })
        .collect();
    check(&picked, &[5, 3], &expected, 0.0);
    // with a mask from a comparison, and through a view
    let m = tensor(&x, s).gt(&tensor(&y, s));
    let xt = tensor(&x, (Const::<5>, Const::<3>)).t();
    let yt = tensor(&y, (Const::<5>, Const::<3>)).t();
    let mt = tensor(&m.to_vec(), (Const::<5>, Const::<3>)).t();
    let maxed = xt.where_else(&mt, &yt);
    let expected: Vec<f64> = indices(&[3, 5])
        .iter()
        .map(|i| (x[i[1] * 3 + i[0]] as f64).max(y[i[1] * 3 + i[0]] as f64))
        .collect();
    check(&maxed, &[3, 5], &expected, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Reductions

#[derive(Clone, Copy, Debug)]
enum Red {
    Sum,
    Max,
    Min,
    Mean,
}

/// Reduces `values` (shape `dims`) over `axes`, keeping them as size 1, in f64.
fn reduce_expected(values: &[f32], dims: &[usize], axes: &[usize], op: Red) -> Vec<f64> {
    let out_dims: Vec<usize> = dims
        .iter()
        .enumerate()
        .map(|(d, &n)| if axes.contains(&d) { 1 } else { n })
        .collect();
    let n_out: usize = out_dims.iter().product();
    let count: usize = axes.iter().map(|&a| dims[a]).product();
    let init = match op {
        Red::Sum | Red::Mean => 0.0,
        Red::Max => f64::NEG_INFINITY,
        Red::Min => f64::INFINITY,
    };
    let mut out = vec![init; n_out];
    for index in indices(dims) {
        let o: Vec<usize> = index
            .iter()
            .enumerate()
            .map(|(d, &i)| if axes.contains(&d) { 0 } else { i })
            .collect();
        let slot = &mut out[offset(&out_dims, &o)];
        let v = values[offset(dims, &index)] as f64;
        *slot = match op {
            Red::Sum | Red::Mean => *slot + v,
            Red::Max => slot.max(v),
            Red::Min => slot.min(v),
        };
    }
    if let Red::Mean = op {
        out.iter_mut().for_each(|v| *v /= count as f64);
    }
    out
}

#[test]
fn reductions_over_typed_axes() {
    type X = (usize, Const<4>, Const<5>);
    for batch in [3usize, 1, 0] {
        let x = data(&mut rng(14), batch * 20, -2.0, 2.0);
        let t: Tensor<X> = tensor(&x, (batch, Const, Const));
        let dims = [batch, 4, 5];
        let e = |axes: &[usize], op| reduce_expected(&x, &dims, axes, op);

        // The reduced axes disappear...
        let s0: Tensor<(Const<4>, Const<5>)> = t.sum::<Axis<0>>();
        check(&s0, &[4, 5], &e(&[0], Red::Sum), SUM_TOL);
        let s1: Tensor<(usize, Const<5>)> = t.sum::<Axis<1>>();
        check(&s1, &[batch, 5], &e(&[1], Red::Sum), SUM_TOL);
        let s02: Tensor<(Const<4>,)> = t.sum::<Axes2<0, 2>>();
        check(&s02, &[4], &e(&[0, 2], Red::Sum), SUM_TOL);
        let s012: Tensor<()> = t.sum::<Axes3<0, 1, 2>>();
        check(&s012, &[], &e(&[0, 1, 2], Red::Sum), SUM_TOL);
        let mx: Tensor<(usize, Const<4>)> = t.max::<Axis<2>>();
        check(&mx, &[batch, 4], &e(&[2], Red::Max), 0.0);
        let mn: Tensor<(Const<5>,)> = t.min::<Axes2<0, 1>>();
        check(&mn, &[5], &e(&[0, 1], Red::Min), 0.0);
        let me: Tensor<(usize, Const<5>)> = t.mean::<Axis<1>>();
        check(&me, &[batch, 5], &e(&[1], Red::Mean), SUM_TOL);
        let me0: Tensor<(Const<4>, Const<5>)> = t.mean::<Axis<0>>();
        check(&me0, &[4, 5], &e(&[0], Red::Mean), SUM_TOL);

        // ... or stay as `One`.
        let k: Tensor<(usize, One, Const<5>)> = t.sum_keepdim::<Axis<1>>();
        check(&k, &[batch, 1, 5], &e(&[1], Red::Sum), SUM_TOL);
        let k: Tensor<(One, Const<4>, One)> = t.max_keepdim::<Axes2<0, 2>>();
        check(&k, &[1, 4, 1], &e(&[0, 2], Red::Max), 0.0);
        let k: Tensor<(usize, Const<4>, One)> = t.min_keepdim::<Axis<2>>();
        check(&k, &[batch, 4, 1], &e(&[2], Red::Min), 0.0);
        let k: Tensor<(One, Const<4>, Const<5>)> = t.mean_keepdim::<Axis<0>>();
        check(&k, &[1, 4, 5], &e(&[0], Red::Mean), SUM_TOL);

        // Over everything. An empty tensor sums to 0, maxes to -inf, mins to +inf, means to NaN.
        check(&t.sum_all(), &[], &e(&[0, 1, 2], Red::Sum), SUM_TOL);
        check(&t.max_all(), &[], &e(&[0, 1, 2], Red::Max), 0.0);
        check(&t.min_all(), &[], &e(&[0, 1, 2], Red::Min), 0.0);
        check(&t.mean_all(), &[], &e(&[0, 1, 2], Red::Mean), SUM_TOL);
    }
    // keepdim results broadcast back against the input (a max-subtracted softmax numerator)
    let x = data(&mut rng(15), 12, -2.0, 2.0);
    let t = tensor(&x, (Const::<3>, Const::<4>));
    let shifted = (&t - t.max_keepdim::<Axis<1>>()).exp();
    let expected: Vec<f64> = indices(&[3, 4])
        .iter()
        .map(|i| {
            let row_max = (0..4)
                .map(|j| x[i[0] * 4 + j] as f64)
                .fold(f64::NEG_INFINITY, f64::max);
            (x[i[0] * 4 + i[1]] as f64 - row_max).exp()
        })
        .collect();
    check(&shifted, &[3, 4], &expected, ELEMENTWISE_TOL);
}

#[test]
fn reductions_over_empty_axes() {
    let t = Tensor::zeros_in((Const::<3>, 0usize));
    check(&t.sum::<Axis<1>>(), &[3], &[0.0; 3], 0.0);
    check(&t.max::<Axis<1>>(), &[3], &[f64::NEG_INFINITY; 3], 0.0);
    check(&t.min::<Axis<1>>(), &[3], &[f64::INFINITY; 3], 0.0);
    check(&t.mean::<Axis<1>>(), &[3], &[f64::NAN; 3], 0.0);
    check(&t.sum::<Axis<0>>(), &[0], &[], 0.0);
    check(&t.sum_all(), &[], &[0.0], 0.0);
}

// ---------------------------------------------------------------------------------------------
// Movement

/// `values` (shape `dims`) permuted: axis `k` of the result is axis `order[k]`.
fn permute_expected(values: &[f32], dims: &[usize], order: &[usize]) -> Vec<f64> {
    let out: Vec<usize> = order.iter().map(|&a| dims[a]).collect();
    indices(&out)
        .iter()
        .map(|o| {
            let mut src = vec![0; dims.len()];
            for (k, &a) in order.iter().enumerate() {
                src[a] = o[k];
            }
            values[offset(dims, &src)] as f64
        })
        .collect()
}

#[test]
fn reshape_flatten_permute_transpose() {
    let x = data(&mut rng(16), 24, -1.0, 1.0);
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let t = tensor(&x, (Const::<2>, Const::<3>, Const::<4>));
    check(&t.reshape::<Rank2<6, 4>>(), &[6, 4], &xf, 0.0);
    check(&t.reshape::<(Const<4>, One, Const<6>)>(), &[4, 1, 6], &xf, 0.0);
    check(&t.flatten::<24>(), &[24], &xf, 0.0);
    check(&t.reshape_to((Const::<2>, 12usize)), &[2, 12], &xf, 0.0);
    check(&t.try_reshape_to((3usize, 8usize)).unwrap(), &[3, 8], &xf, 0.0);
    let err = t.try_reshape_to((5usize, 5usize)).unwrap_err();
    assert!(
        err.to_string().contains("[2, 3, 4]") && err.to_string().contains("[5, 5]"),
        "{err}"
    );

    for order in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1], [2, 1, 0]] {
        let p = match order {
            [0, 1, 2] => t
                .permute::<Axes3<0, 1, 2>>()
                .reshape_to((Const::<2>, Const::<3>, Const::<4>)),
            [2, 0, 1] => t
                .permute::<Axes3<2, 0, 1>>()
                .reshape_to((Const::<2>, Const::<3>, Const::<4>)),
            [1, 2, 0] => t
                .permute::<Axes3<1, 2, 0>>()
                .reshape_to((Const::<2>, Const::<3>, Const::<4>)),
            [0, 2, 1] => t
                .permute::<Axes3<0, 2, 1>>()
                .reshape_to((Const::<2>, Const::<3>, Const::<4>)),
            _ => t
                .permute::<Axes3<2, 1, 0>>()
                .reshape_to((Const::<2>, Const::<3>, Const::<4>)),
        };
        // reshaping a non-contiguous view copies in the permuted order
        check(&p, &[2, 3, 4], &permute_expected(&x, &[2, 3, 4], &order), 0.0);
    }
    let p: Tensor<(Const<4>, Const<2>, Const<3>)> = t.permute::<Axes3<2, 0, 1>>();
    check(&p, &[4, 2, 3], &permute_expected(&x, &[2, 3, 4], &[2, 0, 1]), 0.0);
    check(
        &(p.exp() + 1.0),
        &[4, 2, 3],
        &permute_expected(&x, &[2, 3, 4], &[2, 0, 1])
            .iter()
            .map(|v| v.exp() + 1.0)
            .collect::<Vec<_>>(),
        ELEMENTWISE_TOL,
    );

    let m = tensor(&x[..12], (3usize, Const::<4>));
    let mt: Tensor<(Const<4>, usize)> = m.t();
    check(&mt, &[4, 3], &permute_expected(&x[..12], &[3, 4], &[1, 0]), 0.0);
    check(&mt.t(), &[3, 4], &xf[..12], 0.0);
    // Ranks 4 to 6: the last two axes swapped, the values of a plain-loop permutation.
    let x720 = data(&mut rng(23), 720, -1.0, 1.0);
    let r4 = tensor(&x720[..120], (Const::<2>, Const::<3>, Const::<4>, Const::<5>));
    check(
        &r4.t(),
        &[2, 3, 5, 4],
        &permute_expected(&x720[..120], &[2, 3, 4, 5], &[0, 1, 3, 2]),
        0.0,
    );
    let r5 = tensor(
        &x720[..240],
        (2usize, Const::<2>, Const::<3>, Const::<4>, Const::<5>),
    );
    let want5 = permute_expected(&x720[..240], &[2, 2, 3, 4, 5], &[0, 1, 2, 4, 3]);
    check(&r5.t(), &[2, 2, 3, 5, 4], &want5, 0.0);
    let dims6 = [2, 3, 2, 5, 2, 6];
    let r6 = tensor(
        &x720,
        (
            Const::<2>, Const::<3>, Const::<2>, Const::<5>, Const::<2>, Const::<6>,
        ),
    );
    check(
        &r6.t(),
        &[2, 3, 2, 5, 6, 2],
        &permute_expected(&x720, &dims6, &[0, 1, 2, 3, 5, 4]),
        0.0,
    );
    check(
        &mt.reshape_to((12usize,)),
        &[12],
        &permute_expected(&x[..12], &[3, 4], &[1, 0]),
        0.0,
    );
}

#[test]
fn broadcast_pad_and_slice() {
    let x = data(&mut rng(17), 12, -1.0, 1.0);
    let col = tensor(&x[..3], (Const::<3>, One));
    let b: Tensor<Rank3<2, 3, 4>> = col.broadcast();
    let expected: Vec<f64> = indices(&[2, 3, 4]).iter().map(|i| x[i[1]] as f64).collect();
    check(&b, &[2, 3, 4], &expected, 0.0);
    let row = tensor(&x[..4], (One, Const::<4>));
    let rb = row.broadcast_to((5usize, Const::<4>));
    check(
        &rb,
        &[5, 4],
        &indices(&[5, 4])
            .iter()
            .map(|i| x[i[1]] as f64)
            .collect::<Vec<_>>(),
        0.0,
    );
    check(
        &row.try_broadcast_to((0usize, Const::<4>)).unwrap(),
        &[0, 4],
        &[],
        0.0,
    );
    let batch = tensor(&x[..8], (2usize, Const::<4>));
    let same = batch.try_broadcast_to((2usize, Const::<4>)).unwrap();
    check(
        &same,
        &[2, 4],
        &x[..8].iter().map(|&v| v as f64).collect::<Vec<_>>(),
        0.0,
    );
    let err = batch.try_broadcast_to((3usize, Const::<4>)).unwrap_err();
    assert!(
        err.to_string().contains("[2, 4]") && err.to_string().contains("[3, 4]"),
        "{err}"
    );

    // pad: zeros around, statically and with run-time dims
    let m = tensor(&x[..6], (Const::<2>, Const::<3>));
    let p: Tensor<Rank2<3, 6>> = m.pad(&[(1, 0), (2, 1)]).unwrap();
    let expected: Vec<f64> = indices(&[3, 6])
        .iter()
        .map(|i| {
            if i[0] >= 1 && (2..5).contains(&i[1]) {
                x[(i[0] - 1) * 3 + i[1] - 2] as f64
            } else {
                0.0
            }
        })
        .collect();
    check(&p, &[3, 6], &expected, 0.0);
    // Each error says what was wrong: the sizes, the number of pairs, or an overflow.
    let rule = |result: Result<_, teenygrad::Error>| match result {
        Err(teenygrad::Error::ShapeMismatch { op: "pad", rule, .. }) => rule,
        other => panic!("expected a pad error, got {other:?}"),
    };
    assert!(rule(m.pad::<Rank2<3, 6>>(&[(1, 0), (2, 2)])).starts_with("each target dim"));
    assert!(rule(m.pad::<Rank2<3, 6>>(&[(1, 0)])).starts_with("pads must hold one"));
    assert!(rule(m.pad::<Rank2<3, 6>>(&[(usize::MAX, 0), (0, 0)])).contains("overflows usize"));
    let pr = m.pad_to((3usize, Const::<6>), &[(1, 0), (2, 1)]).unwrap();
    check(&pr, &[3, 6], &expected, 0.0);

    // slice: a block, statically and with run-time dims (empty blocks too)
    let big = tensor(&x, (Const::<3>, Const::<4>));
    let s: Tensor<Rank2<2, 3>> = big.slice(&[1, 1]).unwrap();
    let expected: Vec<f64> = indices(&[2, 3])
        .iter()
        .map(|i| x[(i[0] + 1) * 4 + i[1] + 1] as f64)
        .collect();
    check(&s, &[2, 3], &expected, 0.0);
    // The error names the source, the block and where it starts.
    let err = big.slice::<Rank2<2, 3>>(&[2, 0]).unwrap_err().to_string();
    assert_eq!(
        err,
        "slice: a block of dims [2, 3] starting at [2, 0] does not lie inside shape [3, 4]"
    );
    assert!(big.slice::<Rank2<2, 3>>(&[0, 0, 0]).is_err());
    check(
        &big.slice_to((2usize, Const::<3>), &[1, 1]).unwrap(),
        &[2, 3],
        &expected,
        0.0,
    );
    check(
        &big.slice_to((0usize, Const::<4>), &[3, 0]).unwrap(),
        &[0, 4],
        &[],
        0.0,
    );
    let err = big.slice_to((4usize, Const::<4>), &[0, 0]).unwrap_err();
    assert!(
        err.to_string().contains("[3, 4]") && err.to_string().contains("[4, 4]"),
        "{err}"
    );

    // a chain of views: pad, slice back part of it, transpose, reshape (a copy), then compute
    let chain = big
        .pad::<Rank2<5, 4>>(&[(1, 1), (0, 0)])
        .unwrap()
        .slice::<Rank2<4, 2>>(&[0, 2])
        .unwrap()
        .t()
        .reshape::<Rank1<8>>()
        * 2.0;
    let padded = |r: usize, c: usize| {
        if (1..4).contains(&r) {
            x[(r - 1) * 4 + c] as f64
        } else {
            0.0
        }
    };
    let expected: Vec<f64> = (0..8).map(|k| 2.0 * padded(k % 4, 2 + k / 4)).collect();
    check(&chain, &[8], &expected, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Matmul

/// `[batch.., m, k] × [batch.., k, n]` in f64; `b` may have no batch dims (shared by the batch).
fn matmul_expected(a: &[f32], a_dims: &[usize], b: &[f32], b_dims: &[usize]) -> Vec<f64> {
    let ra = a_dims.len();
    let (m, k) = (a_dims[ra - 2], a_dims[ra - 1]);
    let n = b_dims[b_dims.len() - 1];
    let batches: usize = a_dims[..ra - 2].iter().product();
    let b_shared = b_dims.len() == 2;
    let mut out = Vec::with_capacity(batches * m * n);
    for bt in 0..batches {
        let b_off = if b_shared { 0 } else { bt * k * n };
        for i in 0..m {
            for j in 0..n {
                out.push(
                    (0..k)
                        .map(|p| a[(bt * m + i) * k + p] as f64 * b[b_off + p * n + j] as f64)
                        .sum(),
                );
            }
        }
    }
    out
}

/// Multiplies `a` (shape `sa`) by `b` (shape `sb`) and checks the product; `lift` gives the
/// matrix shapes the vectors stand for.
fn matmul_case<SA, SB>(sa: SA, sb: SB, lift_a: &[usize], lift_b: &[usize], seed: u64)
where
    SA: Shape + MatMulShape<SB>,
    SB: Shape,
{
    let mut r = rng(seed);
    let x = data(&mut r, sa.numel(), -1.0, 1.0);
    let y = data(&mut r, sb.numel(), -1.0, 1.0);
    let (a, b) = (tensor(&x, sa), tensor(&y, sb));
    let expected = matmul_expected(&x, lift_a, &y, lift_b);
    let product = a.matmul(&b);
    let dims = product.dims();
    check(&product, &dims, &expected, SUM_TOL);
    check(&a.try_matmul(&b).unwrap(), &dims, &expected, SUM_TOL);
    // tracked operands give the same values
    check(&a.clone().requires_grad().matmul(&b), &dims, &expected, SUM_TOL);
}

#[test]
fn matmul_in_every_form() {
    let c = |n: usize| n;
    // matrix × matrix
    matmul_case(
        (Const::<3>, Const::<4>),
        (Const::<4>, Const::<5>),
        &[3, 4],
        &[4, 5],
        20,
    );
    // batched × batched, with a run-time batch
    matmul_case(
        (2usize, Const::<3>, Const::<4>),
        (2usize, Const::<4>, Const::<5>),
        &[2, 3, 4],
        &[2, 4, 5],
        21,
    );
    // batched × matrix (the matrix is shared by the batch)
    matmul_case(
        (3usize, Const::<2>, Const::<4>),
        (Const::<4>, Const::<5>),
        &[3, 2, 4],
        &[4, 5],
        22,
    );
    // vector × matrix and matrix × vector
    matmul_case((Const::<4>,), (Const::<4>, Const::<5>), &[1, 4], &[4, 5], 23);
    matmul_case((Const::<3>, Const::<4>), (Const::<4>,), &[3, 4], &[4, 1], 24);
    // rank 4: two batch dims
    matmul_case(
        (2usize, Const::<2>, Const::<3>, Const::<4>),
        (2usize, Const::<2>, Const::<4>, Const::<2>),
        &[4, 3, 4],
        &[4, 4, 2],
        25,
    );
    // run-time inner and outer dims
    matmul_case((5usize, 7usize), (7usize, Const::<3>), &[5, 7], &[7, 3], 26);
    matmul_case((c(6),), (c(6), c(2)), &[1, 6], &[6, 2], 27);
    // size-1 and zero-size dims (an empty inner dim gives zeros)
    matmul_case(
        (Const::<1>, Const::<4>),
        (Const::<4>, Const::<1>),
        &[1, 4],
        &[4, 1],
        28,
    );
    matmul_case(
        (0usize, Const::<4>),
        (Const::<4>, Const::<5>),
        &[0, 4],
        &[4, 5],
        29,
    );
    matmul_case((Const::<3>, 0usize), (0usize, Const::<2>), &[3, 0], &[0, 2], 30);
    matmul_case(
        (0usize, Const::<2>, Const::<3>),
        (Const::<3>, Const::<2>),
        &[0, 2, 3],
        &[3, 2],
        31,
    );
    // large enough for the blocked sgemm path
    matmul_case(
        (Const::<33>, Const::<64>),
        (Const::<64>, Const::<17>),
        &[33, 64],
        &[64, 17],
        32,
    );
}

#[test]
fn matmul_of_views_and_of_results() {
    let mut r = rng(33);
    let x = data(&mut r, 12, -1.0, 1.0);
    let y = data(&mut r, 20, -1.0, 1.0);
    let a = tensor(&x, (Const::<4>, Const::<3>)); // used as aᵀ: 3×4
    let b = tensor(&y, (Const::<5>, Const::<4>)); // used as bᵀ: 4×5
    let at: Vec<f32> = permute_expected(&x, &[4, 3], &[1, 0])
        .iter()
        .map(|&v| v as f32)
        .collect();
    let bt: Vec<f32> = permute_expected(&y, &[5, 4], &[1, 0])
        .iter()
        .map(|&v| v as f32)
        .collect();
    let expected = matmul_expected(&at, &[3, 4], &bt, &[4, 5]);
    check(&a.t().matmul(&b.t()), &[3, 5], &expected, SUM_TOL);
    // a computed (pending) operand and a computed consumer
    let e: Vec<f64> = matmul_expected(&at, &[3, 4], &bt, &[4, 5])
        .iter()
        .map(|v| (2.0 * v).tanh())
        .collect();
    check(&(a.t() * 2.0).matmul(&b.t()).tanh(), &[3, 5], &e, SUM_TOL);
}

// ---------------------------------------------------------------------------------------------
// Run-time dims that disagree

fn batches() -> (Tensor<Batch4>, Tensor<Batch4>) {
    (
        Tensor::zeros_in((3usize, Const::<4>)),
        Tensor::ones_in((5usize, Const::<4>)),
    )
}

#[test]
#[should_panic(expected = "add: shapes [3, 4] and [5, 4] are incompatible")]
fn operator_panics_naming_both_shapes() {
    let (a, b) = batches();
    let _ = &a + &b;
}

#[test]
#[should_panic(expected = "mul: shapes [3, 4] and [5, 4] are incompatible")]
fn owned_operator_panics_naming_both_shapes() {
    let (a, b) = batches();
    let _ = a * b;
}

#[test]
#[should_panic(expected = "maximum: shapes [3, 4] and [5, 4] are incompatible")]
fn method_panics_naming_both_shapes() {
    let (a, b) = batches();
    let _ = a.maximum(&b);
}

#[test]
#[should_panic(expected = "lt: shapes [3, 4] and [5, 4] are incompatible")]
fn comparison_panics_naming_both_shapes() {
    let (a, b) = batches();
    let _ = a.lt(&b);
}

#[test]
#[should_panic(expected = "matmul: shapes [3, 4] and [5, 2] are incompatible")]
fn matmul_panics_naming_both_shapes() {
    let a = Tensor::zeros_in((Const::<3>, 4usize));
    let _ = a.matmul(&Tensor::zeros_in((5usize, Const::<2>)));
}

#[test]
#[should_panic(
    expected = "where_else: shapes [3, 4] and [5, 4] are incompatible (the condition (first) must have the shape of self (second))"
)]
fn where_else_panics_naming_both_shapes() {
    let (a, b) = batches();
    let _ = b.where_else(&a, &b);
}

#[test]
#[should_panic(expected = "broadcast_to: shapes [3, 4] and [5, 4] are incompatible")]
fn broadcast_to_panics_naming_both_shapes() {
    let (a, _) = batches();
    let _ = a.broadcast_to((5usize, Const::<4>));
}

#[test]
fn try_forms_return_errors_naming_both_shapes() {
    let (a, b) = batches();
    // Each error names the method that was called.
    let errors = [
        ("add", a.try_add(&b).err()),
        ("sub", a.try_sub(&b).err()),
        ("mul", a.try_mul(&b).err()),
        ("div", a.try_div(&b).err()),
        ("maximum", a.try_maximum(&b).err()),
        ("minimum", a.try_minimum(&b).err()),
        ("pow", a.try_pow(&b).err()),
        ("broadcast_to", a.try_broadcast_to((5usize, Const::<4>)).err()),
        ("reshape", a.try_reshape_to((5usize, Const::<4>)).err()),
        ("where_else", a.try_where_else(&a, &b).err()),
        ("where_else", b.try_where_else(&a, &b).err()),
        ("add", a.clone().requires_grad().try_add(&b).err()),
        ("lt", a.try_lt(&b).err()),
        ("le", a.try_le(&b).err()),
        ("gt", a.try_gt(&b).err()),
        ("ge", a.try_ge(&b).err()),
        ("eq", a.try_eq(&b).err()),
        ("mse", try_mse(&a, &b).err()),
    ];
    for (op, err) in errors {
        let err = err.expect("an error, not a result");
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{op}: ")) && msg.contains("[3, 4]") && msg.contains("[5, 4]"),
            "{msg}"
        );
    }
    // where_else's three operands: the message says which one differs from self.
    let other = a.try_where_else(&a, &b).unwrap_err().to_string();
    assert!(
        other.ends_with("(other (first) must have the shape of self (second))"),
        "{other}"
    );
    let m = Tensor::zeros_in((Const::<3>, 4usize));
    let err = m.try_matmul(&Tensor::zeros_in((5usize, Const::<2>))).unwrap_err();
    assert_eq!(
        err,
        Error::ShapeMismatch {
            op: "matmul",
            lhs: vec![3, 4],
            rhs: vec![5, 2],
            rule: "the inner dims (and batch dims) must be equal"
        }
    );
    let batched = Tensor::zeros_in((2usize, Const::<3>, Const::<4>));
    assert!(
        batched
            .try_matmul(&Tensor::zeros_in((3usize, Const::<4>, Const::<1>)))
            .is_err(),
        "batch dims differ"
    );
}

// ---------------------------------------------------------------------------------------------
// Display

#[test]
fn display_shows_values_and_shape() {
    assert_eq!(Tensor::from(3.5).to_string(), "tensor(3.5000, shape=[])");
    assert_eq!(
        Tensor::from([1.0, -2.0]).to_string(),
        "tensor([1.0000, -2.0000], shape=[2])"
    );
    assert_eq!(
        Tensor::from([[[1.0], [2.0]]]).to_string(),
        "tensor([[[1.0000],\n         [2.0000]]], shape=[1, 2, 1])"
    );
    assert_eq!(
        Tensor::zeros_in((0usize, Const::<3>)).to_string(),
        "tensor([], shape=[0, 3])"
    );
    // a pending view displays its logical values
    assert_eq!(
        Tensor::from([[1.0, 2.0], [3.0, 4.0]]).t().to_string(),
        "tensor([[1.0000, 3.0000],\n        [2.0000, 4.0000]], shape=[2, 2])"
    );
    // Debug adds the shape type and the mode
    let tracked = Tensor::from([1.0]).requires_grad();
    assert_eq!(
        format!("{tracked:?}"),
        "tensor([1.0000], shape=[1]) as (Const<1>,) (tracked)"
    );
    let runtime = Tensor::zeros_in((2usize, Const::<1>));
    assert_eq!(
        format!("{runtime:?}"),
        "tensor([[0.0000],\n        [0.0000]], shape=[2, 1]) as (2, Const<1>)"
    );
    assert!(!format!("{:?}", Tensor::from([1.0])).contains("tracked"));
}

#[test]
fn display_switches_to_scientific_notation_as_pytorch_does() {
    // Magnitudes below 1e-4, from 1e8, or spanning more than a factor of 1000 (nonzero finite
    // values only; zeros, infinities and NaN do not count), compared in f64: the f32 nearest
    // 1e-4 is below it, and PyTorch 2.5.1 prints it as 1.0000e-04 too.
    let cases: [(&[f32], &str); 8] = [
        (&[1e-6, -3e-5], "[1.0000e-6, -3.0000e-5]"),
        (&[1e8, 1.0], "[1.0000e8, 1.0000e0]"),
        (&[1000.0, 1.0, 0.0], "[1000.0000, 1.0000, 0.0000]"),
        (&[1000.5, 1.0], "[1.0005e3, 1.0000e0]"),
        (&[1e-4, f32::INFINITY, f32::NAN], "[1.0000e-4, inf, NaN]"),
        (&[2e-4, f32::NEG_INFINITY], "[0.0002, -inf]"),
        (&[0.0, -0.0], "[0.0000, -0.0000]"),
        (&[2e-5], "[2.0000e-5]"),
    ];
    for (values, shown) in cases {
        let t = Tensor::from_vec(values.to_vec(), (values.len(),)).unwrap();
        assert_eq!(
            t.to_string(),
            format!("tensor({shown}, shape=[{}])", values.len())
        );
    }
}

#[test]
fn display_elides_large_tensors() {
    // 1000 elements print whole; 1001 are elided to the first and last three of each axis.
    let whole = Tensor::<Rank1<1000>>::arange().to_string();
    assert!(!whole.contains("...") && whole.contains("999.0000"));
    let long = Tensor::<Rank1<1001>>::arange().to_string();
    assert_eq!(
        long,
        "tensor([0.0000, 1.0000, 2.0000, ..., 998.0000, 999.0000, 1000.0000], shape=[1001])"
    );

    // 1 to 1599 span more than a factor of 1000: scientific notation, as PyTorch prints it.
    let big = Tensor::<Rank1<1600>>::arange()
        .reshape::<Rank2<40, 40>>()
        .to_string();
    assert!(big.ends_with("shape=[40, 40])"), "{big}");
    let lines: Vec<&str> = big.lines().collect();
    assert_eq!(lines.len(), 7, "3 rows, an elision, 3 rows:\n{big}");
    assert_eq!(
        lines[0],
        "tensor([[0.0000e0, 1.0000e0, 2.0000e0, ..., 3.7000e1, 3.8000e1, 3.9000e1],"
    );
    assert_eq!(
        lines[1],
        "        [4.0000e1, 4.1000e1, 4.2000e1, ..., 7.7000e1, 7.8000e1, 7.9000e1],"
    );
    assert_eq!(lines[3], "        ...,");
    assert_eq!(
        lines[6],
        "        [1.5600e3, 1.5610e3, 1.5620e3, ..., 1.5970e3, 1.5980e3, 1.5990e3]], shape=[40, 40])"
    );
    assert!(big.len() < 600, "elided output stays short: {} chars", big.len());
}

/// Sums of finite values whose partial sums, taken in lanes, overflow with opposite signs: a
/// review found NaN for a sum of 0 on rows, and NaN for `inf` plus finite values.
#[test]
fn sums_of_huge_values_do_not_make_nan_from_finite_ones() {
    let (max, inf) = (f32::MAX, f32::INFINITY);
    let mut row = [0.0f32; 16];
    (row[0], row[1], row[8], row[9]) = (max, -max, max, -max);
    let x = Tensor::from([row]);
    assert_eq!(x.sum::<Axis<1>>().to_vec(), [0.0]);
    assert_eq!(x.sum_all().item(), 0.0);
    assert_eq!(x.mean_all().item(), 0.0);
    assert_eq!(x.t().sum::<Axis<0>>().to_vec(), [0.0], "the column path");
    row[0] = inf;
    let y = Tensor::from([row]);
    assert_eq!(y.sum::<Axis<1>>().to_vec(), [inf]);
    assert_eq!(y.t().sum::<Axis<0>>().to_vec(), [inf]);
    // Fused into the kernel that computes them, too.
    assert_eq!((&x * 1.0).sum::<Axis<1>>().to_vec(), [0.0]);
}
