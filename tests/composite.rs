//! Composite operations against f64 references computed by hand: softmax, log_softmax,
//! logsumexp, var, std, erf, gelu (both forms), cross entropy (values, errors, gradients), mse and
//! argmax_rows, clamp, masked_fill, tril and triu.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::prelude::*;

const EPS: f64 = f32::EPSILON as f64;

/// `rows × cols` values, normal-ish with scale `scale`, from a seed.
fn random_matrix(rows: usize, cols: usize, scale: f32, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..rows * cols)
        .map(|_| (rng.random::<f32>() * 2.0 - 1.0) * scale)
        .collect()
}

fn rows_of(values: &[f32], cols: usize) -> Vec<Vec<f64>> {
    values
        .chunks(cols)
        .map(|r| r.iter().map(|&v| v as f64).collect())
        .collect()
}

/// `log Σ exp(row)` in f64 (max-subtracted).
fn lse64(row: &[f64]) -> f64 {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + row.iter().map(|&v| (v - m).exp()).sum::<f64>().ln()
}

fn assert_close(got: &[f32], want: &[f64], tol: impl Fn(f64) -> f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(
            err <= tol(w),
            "{what}[{i}]: got {g}, want {w} (err {err:e} > {:e})",
            tol(w)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// softmax, log_softmax, logsumexp

#[test]
fn softmax_matches_f64_and_rows_sum_to_one() {
    let data = random_matrix(6, 7, 5.0, 1);
    let p = Tensor::<Rank2<6, 7>>::from_vec(data.clone(), Default::default())
        .unwrap()
        .softmax::<Axis<1>>();
    let got = p.to_vec();
    let mut want = Vec::new();
    for row in rows_of(&data, 7) {
        let l = lse64(&row);
        want.extend(row.iter().map(|&v| (v - l).exp()));
    }
    // Each probability is exp(x - m) / Σ: a handful of roundings (exp to ~1 ulp, the sum of 7
    // terms ≤ 7u relative, one division) — 16ε relative, plus a tiny absolute floor.
    assert_close(&got, &want, |w| 16.0 * EPS * w.abs() + 1e-30, "softmax");
    for row in got.chunks(7) {
        let sum: f64 = row.iter().map(|&v| v as f64).sum();
        assert!((sum - 1.0).abs() < 8.0 * EPS, "row sums to {sum}");
    }
    // Over axis 0 as well: columns sum to 1.
    let q = Tensor::<Rank2<6, 7>>::from_vec(data, Default::default())
        .unwrap()
        .softmax::<Axis<0>>();
    let sums = q.sum::<Axis<0>>().to_vec();
    assert!(
        sums.iter().all(|s| (s - 1.0).abs() < 8.0 * f32::EPSILON),
        "{sums:?}"
    );
}

#[test]
fn softmax_family_is_finite_for_logits_of_1e4() {
    let x = Tensor::from([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, 9999.0]]);
    let p = x.softmax::<Axis<1>>().to_vec();
    let l = x.log_softmax::<Axis<1>>().to_vec();
    let s = x.logsumexp::<Axis<1>>().to_vec();
    assert!(
        p.iter().chain(&l).chain(&s).all(|v| v.is_finite()),
        "{p:?} {l:?} {s:?}"
    );
    for (r, row) in rows_of(&x.to_vec(), 3).iter().enumerate() {
        let lse = lse64(row);
        // |lse| ≈ 1e4: one rounding of that magnitude, ε·1e4 ≈ 1e-3.
        assert!(
            (s[r] as f64 - lse).abs() <= 2.0 * EPS * lse.abs(),
            "lse row {r}: {} vs {lse}",
            s[r]
        );
        for c in 0..3 {
            let want = row[c] - lse;
            assert!((l[r * 3 + c] as f64 - want).abs() <= 2.0 * EPS * (row[c].abs() + lse.abs()) + 1e-6);
            assert!((p[r * 3 + c] as f64 - want.exp()).abs() <= 1e-6);
        }
    }
    assert_eq!(&p[..3], &[1.0, 0.0, 0.0]);
    assert_eq!(l[1], -2e4);
}

#[test]
fn log_softmax_and_logsumexp_match_f64() {
    let data = random_matrix(5, 9, 20.0, 2);
    let x = Tensor::<Rank2<5, 9>>::from_vec(data.clone(), Default::default()).unwrap();
    let rows = rows_of(&data, 9);
    let lse: Vec<f64> = rows.iter().map(|r| lse64(r)).collect();
    // logsumexp: m + log(Σ) with Σ ∈ [1, 9]: a few roundings of magnitude |lse| ≤ ~30.
    assert_close(
        &x.logsumexp::<Axis<1>>().to_vec(),
        &lse,
        |w| 8.0 * EPS * (w.abs() + 1.0),
        "logsumexp",
    );
    let want: Vec<f64> = rows
        .iter()
        .zip(&lse)
        .flat_map(|(r, l)| r.iter().map(move |v| v - l))
        .collect();
    // log_softmax = x - lse: the error of lse plus one subtraction.
    assert_close(
        &x.log_softmax::<Axis<1>>().to_vec(),
        &want,
        |w| 8.0 * EPS * (w.abs() + 30.0),
        "log_softmax",
    );
    // exp(log_softmax) is softmax.
    let p = x.softmax::<Axis<1>>().to_vec();
    let e: Vec<f64> = x
        .log_softmax::<Axis<1>>()
        .to_vec()
        .iter()
        .map(|&v| (v as f64).exp())
        .collect();
    assert_close(
        &p,
        &e,
        |w| 64.0 * EPS * w.abs() + 1e-30,
        "softmax vs exp(log_softmax)",
    );
    // Over both axes at once.
    let all = x.logsumexp::<Axes2<0, 1>>().item() as f64;
    let flat: Vec<f64> = data.iter().map(|&v| v as f64).collect();
    assert!((all - lse64(&flat)).abs() <= 8.0 * EPS * all.abs());
}

/// A row of all `-inf` has logsumexp `-inf` (as `torch.logsumexp`), not NaN, and does not spoil
/// the other rows; `-inf` entries in a row (a mask) get probability 0 and log-probability `-inf`.
#[test]
fn minus_infinity_rows_and_masks() {
    let inf = f32::INFINITY;
    let x = Tensor::from([[-inf, -inf, -inf], [0.0, -inf, 0.0], [1.0, 2.0, 3.0]]);
    let s = x.logsumexp::<Axis<1>>().to_vec();
    assert_eq!(s[0], -inf);
    assert!((s[1] - std::f32::consts::LN_2).abs() < 1e-7);
    assert!((s[2] as f64 - lse64(&[1.0, 2.0, 3.0])).abs() < 4.0 * EPS * 3.5);
    let p = x.softmax::<Axis<1>>().to_vec();
    assert_eq!(&p[3..6], &[0.5, 0.0, 0.5]);
    let l = x.log_softmax::<Axis<1>>().to_vec();
    assert_eq!(l[4], -inf);
    assert!((l[3] + std::f32::consts::LN_2).abs() < 1e-7 && (l[5] + std::f32::consts::LN_2).abs() < 1e-7);
    // +inf dominates: logsumexp is +inf, as in f64.
    assert_eq!(Tensor::from([inf, 0.0]).logsumexp::<Axis<0>>().item(), inf);
}

/// Large logits: each log-probability is `(x - m) - log Σ exp(x - m)`, so it is accurate to its
/// own magnitude, not rounded to the precision of `m` first (`x - (m + log Σ)` gave -0.69336 for
/// `-ln 2` at logits of 1e4: half an ulp of 1e4).
#[test]
fn log_softmax_keeps_its_accuracy_for_large_logits() {
    for scale in [1e4f32, 1e6, 1e30, 3e38] {
        let row = [scale, scale, 0.0];
        let l = Tensor::from([row]).log_softmax::<Axis<1>>().to_vec();
        // Both shifted logits are 0: the result is -log 2 rounded once.
        assert_eq!(&l[..2], &[-std::f32::consts::LN_2; 2], "{scale}");
        // -scale - ln 2: one rounding of the difference.
        let want = -(scale as f64) - std::f64::consts::LN_2;
        assert!(
            (l[2] as f64 - want).abs() <= EPS * want.abs(),
            "{scale}: {}",
            l[2]
        );
    }
    // Near 1000 the values are a few ulps of themselves, not of 1000.
    let data = [1000.0f32, 999.0, 998.0];
    let l = Tensor::from([data]).log_softmax::<Axis<1>>().to_vec();
    let lse = lse64(&data.map(f64::from));
    for (c, &v) in data.iter().enumerate() {
        let want = v as f64 - lse;
        // Exact shifts, then log of a sum of 3 terms: a few roundings of |want| ≤ 2.5.
        assert!(
            (l[c] as f64 - want).abs() <= 4.0 * EPS * want.abs(),
            "{c}: {} vs {want}",
            l[c]
        );
    }
    // A row holding +inf has no finite log-probabilities: NaN, as in PyTorch.
    let inf = Tensor::from([[f32::INFINITY, 0.0, 1.0]])
        .log_softmax::<Axis<1>>()
        .to_vec();
    assert!(inf.iter().all(|v| v.is_nan()), "{inf:?}");
}

// ---------------------------------------------------------------------------------------------
// var

#[test]
fn var_is_bessel_corrected() {
    let data = random_matrix(4, 6, 3.0, 3);
    let x = Tensor::<Rank2<4, 6>>::from_vec(data.clone(), Default::default()).unwrap();
    let var64 = |v: &[f64]| {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (v.len() - 1) as f64
    };
    let rows = rows_of(&data, 6);
    let want_rows: Vec<f64> = rows.iter().map(|r| var64(r)).collect();
    // Sums of ≤ 24 terms of magnitude ≤ 9: ~24u relative to the sum of squares; 64ε·(1 + var).
    assert_close(
        &x.var::<Axis<1>>().to_vec(),
        &want_rows,
        |w| 64.0 * EPS * (w + 1.0),
        "var rows",
    );
    let cols: Vec<f64> = (0..6)
        .map(|c| var64(&rows.iter().map(|r| r[c]).collect::<Vec<_>>()))
        .collect();
    assert_close(
        &x.var::<Axis<0>>().to_vec(),
        &cols,
        |w| 64.0 * EPS * (w + 1.0),
        "var cols",
    );
    let flat: Vec<f64> = data.iter().map(|&v| v as f64).collect();
    let all = x.var::<Axes2<0, 1>>().item() as f64;
    assert!((all - var64(&flat)).abs() < 64.0 * EPS * (all + 1.0));
    // Exactly: [1, 2, 3, 4] has mean 2.5, squares 2.25 + 0.25 + 0.25 + 2.25 = 5, over 3.
    assert_eq!(
        Tensor::from([1.0, 2.0, 3.0, 4.0]).var::<Axis<0>>().item(),
        5.0 / 3.0
    );
    // Shift invariance: a large offset does not destroy the variance (two-pass, centred).
    let shifted = Tensor::from([1000.0, 1001.0, 1002.0, 1003.0])
        .var::<Axis<0>>()
        .item();
    assert!((shifted - 5.0 / 3.0).abs() < 1e-4, "{shifted}");
}

/// Any correction: against f64 by rows and columns, PyTorch's values and gradient for the
/// population forms, and PyTorch's `inf`/NaN where `n <= correction`.
#[test]
fn var_and_std_take_any_correction() {
    let data = random_matrix(4, 6, 3.0, 5);
    let x = Tensor::<Rank2<4, 6>>::from_vec(data.clone(), Default::default()).unwrap();
    let rows = rows_of(&data, 6);
    for c in [0usize, 1, 2, 5] {
        let var64 = |v: &[f64]| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (v.len() - c) as f64
        };
        let want: Vec<f64> = rows.iter().map(|r| var64(r)).collect();
        // As `var_is_bessel_corrected`: a sum of ≤ 6 squares of ≤ 9, a division.
        let bound = |w: f64| 64.0 * EPS * (w + 1.0);
        assert_close(
            &x.var_with_correction::<Axis<1>>(c).to_vec(),
            &want,
            bound,
            "var rows",
        );
        let roots: Vec<f64> = want.iter().map(|v| v.sqrt()).collect();
        assert_close(
            &x.std_with_correction::<Axis<1>>(c).to_vec(),
            &roots,
            bound,
            "std rows",
        );
    }
    // Correction 1 is `var`'s and `std`'s, bit for bit.
    assert_eq!(
        x.var_with_correction::<Axis<0>>(1).to_vec(),
        x.var::<Axis<0>>().to_vec()
    );
    assert_eq!(
        x.std_with_correction::<Axis<0>>(1).to_vec(),
        x.std::<Axis<0>>().to_vec()
    );
    // PyTorch 2.5.1: torch.tensor([1., 2., 4.]).std(correction=0) = 1.2472190856933594 (√(14/9)),
    // gradient (x − mean)/(3·std) = [-0.35634833574295044, -0.08908706903457642,
    // 0.44543546438217163]; var(correction=0) = 1.5555555820465088. Within 2 ulps, as `std`'s.
    let v = Tensor::from([1.0, 2.0, 4.0]).requires_grad();
    let var = v.var_with_correction::<Axis<0>>(0).item() as f64;
    assert!((var - 1.5555555820465088).abs() <= 2.0 * EPS * var, "{var}");
    let s = v.std_with_correction::<Axis<0>>(0);
    let value = s.item() as f64;
    assert!((value - 1.2472190856933594).abs() <= 2.0 * EPS * value, "{value}");
    s.backward();
    let torch = [-0.35634833574295044, -0.08908706903457642, 0.44543546438217163];
    for (&got, want) in v.grad().unwrap().to_vec().iter().zip(torch) {
        assert!((got as f64 - want).abs() <= 2.0 * EPS, "{got} against {want}");
    }
    // n <= correction: PyTorch's divisor max(0, n - c) = 0, so inf, or NaN for equal values
    // or none; population over one value is 0.
    let pair = Tensor::from([1.0, 2.0]);
    assert_eq!(pair.var_with_correction::<Axis<0>>(2).item(), f32::INFINITY);
    assert_eq!(pair.std_with_correction::<Axis<0>>(7).item(), f32::INFINITY);
    assert!(
        Tensor::from([3.0, 3.0])
            .var_with_correction::<Axis<0>>(2)
            .item()
            .is_nan()
    );
    assert_eq!(Tensor::from([3.0]).var_with_correction::<Axis<0>>(0).item(), 0.0);
    assert_eq!(Tensor::from([3.0]).std_with_correction::<Axis<0>>(0).item(), 0.0);
    let empty = Tensor::<Rank2<2, 0>>::zeros()
        .var_with_correction::<Axis<1>>(0)
        .to_vec();
    assert!(empty.iter().all(|v| v.is_nan()), "{empty:?}");
}

/// `std` is `√var`: within its rounding of f64 by rows (half an ulp for the root, half the
/// variance's relative bound), and PyTorch's value, gradient and NaNs at the edges.
#[test]
fn std_is_the_root_of_the_corrected_variance() {
    let data = random_matrix(4, 6, 3.0, 4);
    let x = Tensor::<Rank2<4, 6>>::from_vec(data.clone(), Default::default()).unwrap();
    let want: Vec<f64> = rows_of(&data, 6)
        .iter()
        .map(|r| {
            let mean = r.iter().sum::<f64>() / 6.0;
            (r.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 5.0).sqrt()
        })
        .collect();
    assert_close(
        &x.std::<Axis<1>>().to_vec(),
        &want,
        |w| (32.0 + 0.5) * EPS * (w + 1.0),
        "std rows",
    );
    // PyTorch 2.5.1: torch.tensor([1., 2., 4.]).std() = 1.5275251865386963 (√(7/3)), its
    // gradient (x − mean)/(std·(n − 1)) = [-0.4364357590675354, -0.10910891741514206,
    // 0.5455447435379028]; NaN over one value; a constant row's value 0 and gradient 0.
    let v = Tensor::from([1.0, 2.0, 4.0]).requires_grad();
    let s = v.std::<Axis<0>>();
    // The variance's few roundings (the centered values, their squares and sum, the division),
    // halved by the root: within 2 ulps of PyTorch's value.
    let value = s.item() as f64;
    assert!((value - 1.5275251865386963).abs() <= 2.0 * EPS * value, "{value}");
    s.backward();
    let g = v.grad().unwrap().to_vec();
    let torch = [-0.4364357590675354, -0.10910891741514206, 0.5455447435379028];
    for (&got, want) in g.iter().zip(torch) {
        assert!((got as f64 - want).abs() <= 2.0 * EPS, "{got} against {want}");
    }
    assert!(Tensor::from([5.0]).std::<Axis<0>>().item().is_nan());
    let flat = Tensor::from([[2.0, 2.0], [1.0, 3.0]]).requires_grad();
    let rows = flat.std::<Axis<1>>();
    assert_eq!(rows.to_array(), [0.0, 2f32.sqrt()]);
    rows.sum_all().backward();
    // Row 1: ±1/(1·√2).
    let h = 0.5f32.sqrt();
    assert_eq!(flat.grad().unwrap().to_array(), [[0.0, 0.0], [-h, h]]);
    // The flat row's gradient is +0 whatever flows into it, PyTorch 2.15's (`torch.std(x,
    // dim=1).backward(g)`): under -1, NaN and inf, [0, 0] (the other row -h·g).
    for g in [-1.0, f32::NAN, f32::INFINITY] {
        let flat = Tensor::from([[2.0, 2.0], [1.0, 3.0]]).requires_grad();
        (flat.std::<Axis<1>>() * g).sum_all().backward();
        let grad = flat.grad().unwrap().to_vec();
        assert_eq!(
            [grad[0].to_bits(), grad[1].to_bits()],
            [0, 0],
            "under {g}: {grad:?}"
        );
    }
}

/// Rows of one value repeated, at many values and widths: variance and deviation exactly 0, the
/// deviation's gradient exactly 0 (PyTorch's); and rows far from 0 keep the accuracy of their
/// spread. Both fail when the mean is taken of `x` itself (its rounding, an ulp of `x`, turned
/// a row of 7.7 repeated 5 times into a deviation of 5e-7 with a gradient of -0.89, and the
/// deviation of 1e4 + U(±5e-3) 5 to 9 % off).
#[test]
fn var_and_std_are_exact_on_constant_rows_and_accurate_far_from_zero() {
    let mut rng = StdRng::seed_from_u64(17);
    for n in [2usize, 3, 5, 7, 10, 33] {
        let values: Vec<f32> = (0..40)
            .map(|_| rng.random_range(-1e4f32..1e4))
            .chain([7.7, 123.456, 1e4 + 0.1])
            .collect();
        let rows = values.len();
        let data: Vec<f32> = values.iter().flat_map(|&v| std::iter::repeat_n(v, n)).collect();
        let x = Tensor::from_vec(data, (rows, n)).unwrap().requires_grad();
        assert!(
            x.var::<Axis<1>>().to_vec().iter().all(|&v| v == 0.0),
            "var, n = {n}"
        );
        let std = x.std::<Axis<1>>();
        assert!(std.to_vec().iter().all(|&v| v == 0.0), "std, n = {n}");
        std.sum_all().backward();
        assert!(
            x.grad().unwrap().to_vec().iter().all(|&g| g == 0.0),
            "std's gradient, n = {n}"
        );
    }
    // 1e4 + U(±5e-3) over 5 to 64 values: the deviations from the first value are exact
    // (Sterbenz), so the variance is that of values of the spread's size: within 32ε of f64.
    for (n, seed) in [(5usize, 1u64), (9, 2), (64, 3)] {
        let mut rng = StdRng::seed_from_u64(seed);
        let row: Vec<f32> = (0..n).map(|_| 1e4 + rng.random_range(-5e-3f32..5e-3)).collect();
        let r64: Vec<f64> = row.iter().map(|&v| v as f64).collect();
        let mean = r64.iter().sum::<f64>() / n as f64;
        let want = r64.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
        let x = Tensor::from_vec(row, (n,)).unwrap();
        let var = x.var::<Axis<0>>().item() as f64;
        assert!(
            (var - want).abs() <= 32.0 * EPS * want,
            "n = {n}: {var:e} against {want:e}"
        );
        let std = x.std::<Axis<0>>().item() as f64;
        assert!(
            (std - want.sqrt()).abs() <= 32.0 * EPS * want.sqrt(),
            "n = {n}: {std:e}"
        );
    }
}

/// `torch.clamp`'s values and gradient (PyTorch 2.15): limited values and values at a bound pass
/// no gradient, NaN stays NaN with none, infinities are limited, and `lo > hi` gives `hi`
/// everywhere.
#[test]
fn clamp_matches_torch_values_and_gradients() {
    let nan = f32::NAN;
    let x = Tensor::from([f32::NEG_INFINITY, -2.0, 0.0, 0.5, 1.0, 3.0, f32::INFINITY, nan]).requires_grad();
    let y = x.clamp(0.0, 1.0);
    let got = y.to_array();
    let want = [0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 1.0, nan];
    for (g, w) in got.iter().zip(want) {
        assert!(g == &w || (g.is_nan() && w.is_nan()), "{got:?}");
    }
    (y * Tensor::from([2.0; 8])).sum_all().backward();
    assert_eq!(
        x.grad().unwrap().to_array(),
        [0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0]
    );
    // One-sided with an infinite bound, and the bounds crossed.
    let x = Tensor::from([-3.0, 4.0]);
    assert_eq!(x.clamp(f32::NEG_INFINITY, 0.0).to_array(), [-3.0, 0.0]);
    assert_eq!(x.clamp(2.0, 1.0).to_array(), [1.0, 1.0]);
    // Tracked through a broadcast view, used twice: gradients add where strictly inside (0.5
    // is at the first clamp's bound and inside the second's).
    let w = Tensor::from([0.5, -1.0]).requires_grad();
    let z: Tensor<Rank2<3, 2>, Tracked> = w.broadcast();
    (z.clamp(-0.5, 0.5) + z.clamp(0.0, 1.0)).sum_all().backward();
    assert_eq!(w.grad().unwrap().to_array(), [3.0, 0.0]);
    // A bound equal to both, and a bound of -0.0 against a value of +0.0: no gradient.
    let x = Tensor::from([1.0, 0.0]).requires_grad();
    (x.clamp(1.0, 1.0) + x.clamp(-0.0, 2.0)).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [1.0, 0.0]);
}

/// Against the definition, bit for bit, over values and bounds drawn from a set with signed
/// zeros, infinities, NaN and the bounds themselves: the value is `lo` only where `x < lo`, then
/// `hi` only where `hi <` that, else `x` (so `-0.0` stays `-0.0` at a bound of `0.0`); the
/// gradient is the upstream one exactly where `lo < x < hi` and `+0.0` elsewhere, even where
/// the upstream one is NaN or infinite.
#[test]
fn clamp_is_its_definition_bit_for_bit() {
    let special = [
        -0.0,
        0.0,
        1.0,
        -1.0,
        0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        2.5,
    ];
    let mut rng = StdRng::seed_from_u64(23);
    let pick = |rng: &mut StdRng| match rng.random_range(0..3) {
        0 => special[rng.random_range(0..special.len())],
        _ => rng.random_range(-3.0f32..3.0),
    };
    for _ in 0..200 {
        let (lo, hi) = (pick(&mut rng), pick(&mut rng));
        if lo.is_nan() || hi.is_nan() {
            continue;
        }
        let xs: Vec<f32> = (0..16).map(|_| pick(&mut rng)).collect();
        let ups: Vec<f32> = (0..16).map(|_| pick(&mut rng)).collect();
        let x = Tensor::<Rank1<16>>::from_vec(xs.clone(), Default::default())
            .unwrap()
            .requires_grad();
        let up = Tensor::<Rank1<16>>::from_vec(ups.clone(), Default::default()).unwrap();
        let y = x.clamp(lo, hi);
        (&y * &up).sum_all().backward();
        let (values, grads) = (y.to_vec(), x.grad_values().unwrap());
        for (k, &v) in xs.iter().enumerate() {
            let raised = if v < lo { lo } else { v };
            let want = if hi < raised { hi } else { raised };
            let want_grad = if lo < v && v < hi { ups[k] } else { 0.0 };
            let at = format!("clamp({v}, {lo}, {hi}) with upstream {}", ups[k]);
            assert_eq!(values[k].to_bits(), want.to_bits(), "{at}: {}", values[k]);
            assert_eq!(
                grads[k].to_bits(),
                want_grad.to_bits(),
                "{at}: gradient {}",
                grads[k]
            );
        }
    }
}

#[test]
#[should_panic(expected = "clamp: the bounds must be numbers, got [NaN, 1]")]
fn clamp_with_a_nan_bound_panics() {
    let _ = Tensor::from([1.0]).clamp(f32::NAN, 1.0);
}

/// `torch.masked_fill`: the value where the mask is non-zero (NaN too), the gradient where it
/// is zero; a `[T, T]` causal mask over a run-time batch of `[T, T]` scores.
#[test]
fn masked_fill_matches_torch_and_masks_attention_causally() {
    let x = Tensor::from([[1.0, 2.0], [3.0, 4.0]]).requires_grad();
    let mask = Tensor::from([[0.0, 1.0], [f32::NAN, 0.0]]);
    let y = x.masked_fill(&mask, -7.0);
    assert_eq!(y.to_array(), [[1.0, -7.0], [-7.0, 4.0]]);
    (y * Tensor::from([[2.0, 3.0], [4.0, 5.0]])).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [[2.0, 0.0], [0.0, 5.0]]);

    let mut r = StdRng::seed_from_u64(9);
    let scores = Tensor::uniform_in((3usize, Const::<4>, Const::<4>), -3.0, 3.0, &mut r);
    let future: Vec<f32> = (0..16).map(|k| if k % 4 > k / 4 { 1.0 } else { 0.0 }).collect();
    let future = Tensor::<Rank2<4, 4>>::from_vec(future, Default::default()).unwrap();
    let p = scores
        .masked_fill(&future, f32::NEG_INFINITY)
        .softmax::<Axis<2>>()
        .to_vec();
    for (k, row) in p.chunks(4).enumerate() {
        let i = k % 4;
        assert!(row[i + 1..].iter().all(|&v| v == 0.0), "row {k}: {row:?}");
        let total: f64 = row.iter().map(|&v| f64::from(v)).sum();
        assert!((total - 1.0).abs() <= 4.0 * EPS, "row {k} sums to {total}");
    }
    // A run-time dim of the mask must match.
    let mask = Tensor::<(usize, Const<2>)>::zeros_in((3usize, Const));
    let x = Tensor::<(usize, Const<2>)>::zeros_in((2usize, Const));
    match x.try_masked_fill(&mask, 0.0).unwrap_err() {
        Error::ShapeMismatch { op, lhs, rhs, .. } => {
            assert_eq!((op, lhs, rhs), ("masked_fill", vec![3, 2], vec![2, 2]))
        }
        other => panic!("{other:?}"),
    }
}

/// `torch.tril`/`torch.triu` over the last two axes: by hand at several diagonals, infinities
/// zeroed (not multiplied into NaN), a run-time batch, the gradient where values are kept.
#[test]
fn tril_and_triu_keep_their_triangle_of_each_matrix() {
    let inf = f32::INFINITY;
    let x = Tensor::from([[1.0, 2.0, inf], [4.0, -inf, 6.0]]);
    assert_eq!(x.tril(0).to_array(), [[1.0, 0.0, 0.0], [4.0, -inf, 0.0]]);
    assert_eq!(x.tril(-1).to_array(), [[0.0, 0.0, 0.0], [4.0, 0.0, 0.0]]);
    assert_eq!(x.triu(1).to_array(), [[0.0, 2.0, inf], [0.0, 0.0, 6.0]]);
    assert_eq!(x.triu(-5).to_array(), x.to_array());
    assert_eq!(x.tril(5).to_array(), x.to_array());
    assert_eq!(x.triu(3).to_array(), [[0.0; 3]; 2]);

    let batch = Tensor::<(usize, Const<2>, Const<2>)>::from_vec(
        (1..=12).map(|v| v as f32).collect(),
        (3usize, Const, Const),
    )
    .unwrap();
    assert_eq!(
        batch.triu(0).to_vec(),
        vec![1.0, 2.0, 0.0, 4.0, 5.0, 6.0, 0.0, 8.0, 9.0, 10.0, 0.0, 12.0]
    );
    let w = Tensor::<Rank3<2, 2, 3>>::ones().requires_grad();
    w.tril(0).sum_all().backward();
    let kept = [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]];
    assert_eq!(w.grad().unwrap().to_array(), [kept, kept]);
    let empty = Tensor::<(usize, Const<2>, Const<2>)>::zeros_in((0usize, Const, Const));
    assert!(empty.tril(0).to_vec().is_empty());
}

/// The documented limit of an f32 sum of squares. A change that keeps such a deviation finite
/// (PyTorch's is) should change the docs with this test.
#[test]
fn var_and_std_overflow_where_their_squares_do() {
    // Squares 1e38 + 1e38 < f32::MAX; 2e19² = 4e38 overflows.
    let x = Tensor::from([1e19f32, -1e19]);
    assert_eq!(x.var_with_correction::<Axis<0>>(0).item(), 1e38);
    let x = Tensor::from([2e19f32, -2e19, 0.0]).requires_grad();
    assert_eq!(x.var::<Axis<0>>().item(), f32::INFINITY);
    let std = x.std::<Axis<0>>();
    assert_eq!(std.item(), f32::INFINITY);
    std.backward();
    assert_eq!(x.grad().unwrap().to_vec(), [0.0; 3]);
    // Differences from the first value that overflow: NaN.
    assert!(
        Tensor::from([3e38f32, -3e38, 0.0])
            .var::<Axis<0>>()
            .item()
            .is_nan()
    );
}

/// Bessel's correction has nothing to divide over fewer than two values: NaN, as in PyTorch (a
/// sum of no squares, 0, divided by -1 would say -0).
#[test]
fn var_of_fewer_than_two_values_is_nan() {
    assert!(Tensor::from([3.0]).var::<Axis<0>>().item().is_nan());
    let empty = Tensor::<Rank2<2, 0>>::zeros().var::<Axis<1>>().to_vec();
    assert!(empty.iter().all(|v| v.is_nan()), "{empty:?}");
}

/// `var`'s gradient is PyTorch's rule `2·(x − mean)·g/(n − correction)`. Values from PyTorch 2.15
/// (`torch.var(x, correction=c).backward(g)`, float32).
#[test]
fn var_gradient_is_pytorchs_rule() {
    let grad_of = |values: &[f32], correction: usize, g: f32| {
        let x = Tensor::<Rank1<3>>::from_vec(values.to_vec(), Default::default())
            .unwrap()
            .requires_grad();
        let v = x.var_with_correction::<Axis<0>>(correction);
        let value = v.item();
        (v * g).backward();
        (value, x.grad().unwrap().to_vec())
    };
    // An infinity: its own gradient NaN and the others' infinite, of the opposite sign (the row
    // was NaN everywhere when the mean's gradient was taken too, or when the infinity came
    // first: the values are centered on the first).
    let inf = f32::INFINITY;
    for c in [0, 1] {
        for (values, others) in [
            ([1.0, inf, 2.0], -inf),
            ([inf, 1.0, 2.0], -inf),
            ([-inf, 1.0, 2.0], inf),
        ] {
            let (value, grad) = grad_of(&values, c, 1.5);
            assert!(value.is_nan());
            let at = values.iter().position(|v| v.is_infinite()).unwrap();
            for (i, &g) in grad.iter().enumerate() {
                let want = if i == at { f32::NAN } else { others };
                assert!(
                    g == want || g.is_nan() && want.is_nan(),
                    "{values:?}, correction {c}: {grad:?}"
                );
            }
        }
    }
    // Equal values: zeros with the sign of the upstream gradient, `-0.0` under -1.
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&grad_of(&[2.0; 3], 1, -1.0).1), [(-0.0f32).to_bits(); 3]);
    assert_eq!(bits(&grad_of(&[2.0; 3], 1, 1.5).1), [0; 3]);
    // By hand, `1.5 · (x − 7/3)` for [1, 2, 4] (PyTorch: [-1.9999998807907104,
    // -0.49999988079071045, 2.5]). The centered values carry the mean's rounding, an ulp of 4/3
    // or less, and the product one rounding: 4 ulps of the largest is ample.
    let (_, grad) = grad_of(&[1.0, 2.0, 4.0], 1, 1.5);
    for (got, want) in grad.iter().zip([-2.0, -0.5, 2.5]) {
        assert!(
            (*got as f64 - want).abs() <= 4.0 * EPS * 2.5,
            "{got} against {want}"
        );
    }
    // By rows, each with its own upstream gradient: exact here (PyTorch's too).
    let x = Tensor::from([[1.0, 2.0], [3.0, 7.0]]).requires_grad();
    let v = x.var::<Axis<1>>();
    assert_eq!(v.to_array(), [0.5, 8.0]);
    (v * Tensor::from([1.0, -2.0])).sum::<Axis<0>>().backward();
    assert_eq!(x.grad().unwrap().to_array(), [[-1.0, 1.0], [8.0, -8.0]]);
}

// ---------------------------------------------------------------------------------------------
// erf and gelu

/// erf in f64 to ~1e-15 absolute: `erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))`, a
/// series of positive terms (no cancellation); erfc(6) < 3e-17, so ±1 beyond 6.
fn erf64(x: f64) -> f64 {
    let a = x.abs();
    if a > 6.0 {
        return x.signum();
    }
    let (mut term, mut sum, mut n) = (a, a, 0.0);
    while term > 1e-17 * sum {
        n += 1.0;
        term *= 2.0 * a * a / (2.0 * n + 1.0);
        sum += term;
    }
    x.signum() * 2.0 / std::f64::consts::PI.sqrt() * (-a * a).exp() * sum
}

#[test]
fn reference_erf_is_accurate() {
    // Values from tables (DLMF 7.2, to 16 digits).
    for (x, want) in [
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (3.0, 0.999_977_909_503_001_4),
        (-1.5, -0.966_105_146_475_310_7),
    ] {
        assert!((erf64(x) - want).abs() < 1e-15, "erf64({x}) = {}", erf64(x));
    }
    assert_eq!(erf64(0.0), 0.0);
}

/// The grid of test points: dense in [-6, 6] plus the tails.
fn grid() -> Vec<f32> {
    let mut g: Vec<f32> = (-1200..=1200).map(|i| i as f32 / 200.0).collect();
    g.extend([-50.0, -10.0, -7.5, 7.5, 10.0, 50.0, 1e-6, -1e-6, 1e-3]);
    g
}

/// erf's bound in ulps: its worst over every f32 is 5.894 (`erf_over_every_f32` in the library), and
/// an ulp of `y` is at most `EPS·|y|`.
const ERF_ULPS: f64 = 5.9;

#[test]
fn erf_is_within_its_bound() {
    let g = grid();
    let got = Tensor::from_vec(g.clone(), (g.len(),)).unwrap().erf().to_vec();
    let mut worst = 0.0f64;
    for (&x, &y) in g.iter().zip(&got) {
        let err = (y as f64 - erf64(x as f64)).abs();
        worst = worst.max(err);
        assert!(
            err <= ERF_ULPS * EPS * erf64(x as f64).abs(),
            "erf({x}) = {y}, want {} (err {err:e})",
            erf64(x as f64)
        );
    }
    assert!(got.iter().all(|v| v.abs() <= 1.0));
    // Odd, exactly.
    for (i, &x) in g.iter().enumerate() {
        if let Some(j) = g.iter().position(|&y| y == -x) {
            assert_eq!(got[i], -got[j], "erf(-{x})");
        }
    }
    println!("worst erf error {worst:e}");
}

/// erf's bound is relative, so it holds for tiny arguments too (`x·P(x²)/Q(x²)` has no
/// cancellation), and up to the clamp at 3.925 and past it.
#[test]
fn erf_keeps_relative_accuracy_near_zero() {
    let xs: Vec<f32> = vec![1e-30, 1e-8, -1e-6, 1e-4, 0.01, -0.1, 0.3, 0.5, 3.9, -3.925, 3.93];
    let got = Tensor::from_vec(xs.clone(), (xs.len(),)).unwrap().erf().to_vec();
    for (&x, &y) in xs.iter().zip(&got) {
        let want = erf64(x as f64);
        let rel = (y as f64 - want).abs() / want.abs();
        assert!(
            rel <= ERF_ULPS * EPS,
            "erf({x}) = {y}, want {want} (relative error {rel:e})"
        );
    }
}

/// d/dx erf(x) = (2/√π)·e^(-x²), hand-derived, and erf's backward rule computes exactly that:
/// the square carries x²·u of relative error into e^(-x²) (under 4.5ε at |x| = 3), exp adds about
/// 1 ulp and the two products ε each, so 10ε relative.
#[test]
fn erf_gradient_is_the_gaussian() {
    let xs = [-2.0f32, -0.7, -0.3, -1e-3, 0.0, 0.2, 0.45, 0.55, 1.3, 3.0];
    let x = Tensor::from(xs).requires_grad();
    x.erf().sum_all().backward();
    let grad = x.grad().unwrap().to_array();
    for (&x, &g) in xs.iter().zip(&grad) {
        let want = std::f64::consts::FRAC_2_SQRT_PI * (-(x as f64) * (x as f64)).exp();
        let err = (g as f64 - want).abs();
        assert!(
            err <= 10.0 * EPS * want,
            "erf'({x}) = {g}, want {want} (err {err:e})"
        );
    }
}

#[test]
fn gelu_matches_x_phi_x() {
    let g = grid();
    let got = Tensor::from_vec(g.clone(), (g.len(),)).unwrap().gelu().to_vec();
    for (&x, &y) in g.iter().zip(&got) {
        let x64 = x as f64;
        let want = x64 * 0.5 * (1.0 + erf64(x64 / std::f64::consts::SQRT_2));
        // gelu = x·(1 + erf(x/√2))/2: erf's error scaled by |x|/2, plus the roundings of the
        // scaling (x/√2, ·0.5, +0.5, ·x): 4ε relative to |x|.
        let tol = 0.5 * x64.abs() * ERF_ULPS * EPS + 4.0 * EPS * x64.abs();
        assert!((y as f64 - want).abs() <= tol, "gelu({x}) = {y}, want {want}");
    }
    assert_eq!(Tensor::from([0.0]).gelu().to_array(), [0.0]);
}

#[test]
fn gelu_tanh_matches_its_formula_and_approximates_gelu() {
    let g = grid();
    let got = Tensor::from_vec(g.clone(), (g.len(),))
        .unwrap()
        .gelu_tanh()
        .to_vec();
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let mut worst_vs_exact = 0.0f64;
    for (&x, &y) in g.iter().zip(&got) {
        let x64 = x as f64;
        let want = 0.5 * x64 * (1.0 + (c * (x64 + 0.044_715 * x64 * x64 * x64)).tanh());
        // The inner polynomial and tanh carry a few roundings; tanh' ≤ 1 and the inner value is
        // ≤ (|x| + 0.045|x|³)·0.8, so the error is ~8ε·|x|·(1 + 0.05x²) for the outer ·x.
        let tol = 8.0 * EPS * x64.abs() * (1.0 + 0.05 * x64 * x64) + 1e-30;
        assert!(
            (y as f64 - want).abs() <= tol,
            "gelu_tanh({x}) = {y}, want {want}"
        );
        let exact = x64 * 0.5 * (1.0 + erf64(x64 / std::f64::consts::SQRT_2));
        worst_vs_exact = worst_vs_exact.max((want - exact).abs());
    }
    // The tanh form is itself an approximation of GELU, to about 5e-4 (computed here in f64).
    assert!(worst_vs_exact < 1e-3, "{worst_vs_exact}");
}

// ---------------------------------------------------------------------------------------------
// Losses

#[test]
fn cross_entropy_equals_hand_formula() {
    let data = random_matrix(5, 4, 6.0, 4);
    let labels = [3usize, 0, 2, 2, 1];
    let logits = Tensor::<Rank2<5, 4>>::from_vec(data.clone(), Default::default()).unwrap();
    let loss = cross_entropy(&logits, &Labels::new(labels.to_vec(), Const::<5>).unwrap())
        .unwrap()
        .item();
    let rows = rows_of(&data, 4);
    let want = rows.iter().zip(labels).map(|(r, l)| lse64(r) - r[l]).sum::<f64>() / 5.0;
    // Per sample: lse (a few roundings of |value| ≤ ~10) minus the pick; the mean of 5.
    assert!(
        (loss as f64 - want).abs() <= 32.0 * EPS * 10.0,
        "{loss} vs {want}"
    );

    // A run-time batch gives the same.
    let dynamic = Tensor::from_vec(data, (5usize, Const::<4>)).unwrap();
    let loss2 = cross_entropy(&dynamic, &Labels::from_vec(labels.to_vec()))
        .unwrap()
        .item();
    assert_eq!(loss2, loss);

    // Large logits stay finite: [1e4, -1e4, 0] with label 1 costs 2e4.
    let big = Tensor::from([[1e4, -1e4, 0.0], [1e4, -1e4, 0.0]]);
    let l = cross_entropy(&big, &Labels::new(vec![1, 0], Const::<2>).unwrap())
        .unwrap()
        .item();
    assert_eq!(l, 1e4);
}

#[test]
fn labels_out_of_range_or_of_the_wrong_length_are_errors() {
    let logits = Tensor::<Rank2<3, 4>>::zeros();
    let err = cross_entropy(&logits, &Labels::new(vec![0, 4, 1], Const::<3>).unwrap()).unwrap_err();
    assert_eq!(
        err,
        Error::Data {
            location: "cross_entropy: labels[1]".into(),
            message: "class 4 is out of range for 4 classes (labels count from 0: 0..=3)".into()
        }
    );
    assert!(cross_entropy(&logits, &Labels::new(vec![0, 1, usize::MAX], Const::<3>).unwrap()).is_err());
    // No classes: every label is out of range, and the message has no range to give.
    let none = Tensor::<Rank2<1, 0>>::zeros();
    let err = cross_entropy(&none, &Labels::new(vec![0], Const::<1>).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cross_entropy: labels[0]: class 0 is out of range: there are no classes"
    );
    // Labels::new checks the count against the batch.
    let err = Labels::new(vec![0, 1], Const::<3>).unwrap_err();
    assert_eq!(
        err,
        Error::ShapeMismatch {
            op: "Labels::new",
            lhs: vec![2],
            rhs: vec![3],
            rule: "one class index per sample of the batch"
        }
    );
    assert!(Labels::new(vec![0; 4], 3usize).is_err());
    // A run-time batch of logits against labels of another count.
    let dynamic = Tensor::zeros_in((3usize, Const::<4>));
    let err = cross_entropy(&dynamic, &Labels::from_vec(vec![0, 1])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch {
                op: "cross_entropy",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn mse_equals_hand_formula() {
    let a = random_matrix(3, 5, 4.0, 5);
    let b = random_matrix(3, 5, 4.0, 6);
    let ta = Tensor::<Rank2<3, 5>>::from_vec(a.clone(), Default::default()).unwrap();
    let tb = Tensor::<Rank2<3, 5>>::from_vec(b.clone(), Default::default()).unwrap();
    let want = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| (x as f64 - y as f64).powi(2))
        .sum::<f64>()
        / 15.0;
    let got = mse(&ta, &tb).item() as f64;
    assert!((got - want).abs() <= 32.0 * EPS * want, "{got} vs {want}");
    assert_eq!(mse(&ta, &ta).item(), 0.0);
    // Tracked prediction, untracked target: d/dp = 2(p - t)/n.
    let p = ta.clone().requires_grad();
    mse(&p, &tb).backward();
    let grad = p.grad().unwrap().to_vec();
    let want: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| 2.0 * (x as f64 - y as f64) / 15.0)
        .collect();
    assert_close(&grad, &want, |w| 4.0 * EPS * w.abs() + 1e-30, "mse grad");
    // The tracked side second: (t - p)² is (p - t)², so the same loss and gradient, bit for bit.
    let q = ta.clone().requires_grad();
    let swapped = mse(&tb, &q);
    assert_eq!(swapped.item().to_bits(), mse(&ta, &tb).item().to_bits());
    swapped.backward();
    assert_eq!(q.grad().unwrap().to_vec(), p.grad().unwrap().to_vec());
    // Both tracked: d/dt = -d/dp.
    let (p2, t2) = (ta.clone().requires_grad(), tb.clone().requires_grad());
    mse(&p2, &t2).backward();
    let (gp, gt) = (p2.grad().unwrap().to_vec(), t2.grad().unwrap().to_vec());
    assert_eq!(gp, grad);
    assert!(gp.iter().zip(&gt).all(|(a, b)| *a == -*b), "{gp:?} vs {gt:?}");
}

/// d mean_i CE(softmax(z_i), y_i) / dz = (softmax(z) - one_hot(y)) / B.
/// Large logits, masks and infinities, against f64 by hand (and PyTorch's conventions).
#[test]
fn cross_entropy_with_large_masked_and_infinite_logits() {
    let loss = |row: [f32; 3], label: usize| {
        let x = Tensor::from([row]).requires_grad();
        let l = cross_entropy(&x, &Labels::new(vec![label], Const::<1>).unwrap()).unwrap();
        l.backward();
        (l.item(), x.grad().unwrap().to_array()[0])
    };
    // Logits near 1000: the loss is accurate to its own magnitude (≈ 0.41), not to 1000's ulp.
    let (l, _) = loss([1000.0, 999.0, 998.0], 0);
    let want = lse64(&[1000.0, 999.0, 998.0]) - 1000.0;
    assert!((l as f64 - want).abs() <= 4.0 * EPS * want, "{l} vs {want}");
    // Equal logits of any size cost ln 3.
    for big in [1e10f32, 1e38] {
        let (l, _) = loss([big; 3], 1);
        assert!((l as f64 - 3f64.ln()).abs() <= 2.0 * EPS, "{big}: {l}");
    }
    // A masked (-inf) logit that is not the label costs nothing and gets no gradient.
    let (l, g) = loss([0.5, f32::NEG_INFINITY, 1.0], 0);
    let want = lse64(&[0.5, 1.0]) - 0.5;
    assert!((l as f64 - want).abs() <= 4.0 * EPS, "{l} vs {want}");
    let p0 = 1.0 / (1.0 + 0.5f64.exp());
    assert_close(&g, &[p0 - 1.0, 0.0, 1.0 - p0], |_| 4.0 * EPS, "masked gradient");
    // Masking the label makes the loss infinite; a +inf logit leaves it undefined.
    assert_eq!(loss([f32::NEG_INFINITY, 0.0, 1.0], 0).0, f32::INFINITY);
    let (l, g) = loss([0.0, f32::INFINITY, 1.0], 0);
    assert!(l.is_nan() && g.iter().all(|v| v.is_nan()), "{l} {g:?}");
    // An empty batch: the mean of no losses is NaN (as PyTorch's), and its gradient is empty.
    let none = Tensor::from_vec(vec![], (0usize, Const::<3>))
        .unwrap()
        .requires_grad();
    let l = cross_entropy(&none, &Labels::from_vec(vec![])).unwrap();
    l.backward();
    assert!(l.item().is_nan(), "{}", l.item());
    assert_eq!(none.grad().unwrap().to_vec(), Vec::<f32>::new());
}

#[test]
fn cross_entropy_gradient_is_softmax_minus_one_hot_over_batch() {
    let (b, c) = (4, 6);
    let data = random_matrix(b, c, 3.0, 7);
    let labels = vec![5usize, 0, 3, 3];
    let logits = Tensor::<Rank2<4, 6>>::from_vec(data.clone(), Default::default())
        .unwrap()
        .requires_grad();
    cross_entropy(&logits, &Labels::new(labels.clone(), Const::<4>).unwrap())
        .unwrap()
        .backward();
    let grad = logits.grad().unwrap().to_vec();
    let mut want = Vec::new();
    for (row, &label) in rows_of(&data, c).iter().zip(&labels) {
        let l = lse64(row);
        for (j, &v) in row.iter().enumerate() {
            let one_hot = if j == label { 1.0 } else { 0.0 };
            want.push(((v - l).exp() - one_hot) / b as f64);
        }
    }
    // Entries are ≤ 1/B in magnitude; softmax carries ~16ε relative, the subtraction and /B one
    // rounding each.
    assert_close(&grad, &want, |_| 16.0 * EPS / b as f64, "cross entropy grad");
    // Each row of the gradient sums to 0.
    for row in grad.chunks(c) {
        assert!(row.iter().sum::<f32>().abs() < 1e-6);
    }

    // Finite for logits of ±1e4.
    let big = Tensor::from([[1e4, -1e4, 0.0]]).requires_grad();
    cross_entropy(&big, &Labels::new(vec![1], Const::<1>).unwrap())
        .unwrap()
        .backward();
    assert_eq!(big.grad().unwrap().to_array(), [[1.0, -1.0, 0.0]]);

    // A row with a non-finite logit has NaN in its gradient (its softmax is undefined) and leaves
    // the other rows' gradients as they would be alone.
    let alone = Tensor::from([[0.0, 1.0]]).requires_grad();
    cross_entropy(&alone, &Labels::new(vec![1], Const::<1>).unwrap())
        .unwrap()
        .backward();
    let alone = alone.grad().unwrap().to_array()[0];
    for bad in [f32::NEG_INFINITY, f32::INFINITY, f32::NAN] {
        let x = Tensor::from([[bad, bad], [0.0, 1.0]]).requires_grad();
        cross_entropy(&x, &Labels::new(vec![0, 1], Const::<2>).unwrap())
            .unwrap()
            .backward();
        let grad = x.grad().unwrap().to_array();
        assert!(grad[0].iter().all(|g| g.is_nan()), "{bad}: {grad:?}");
        // The batch of 2 halves each row's share.
        assert_eq!(grad[1], alone.map(|g| g / 2.0), "{bad}");
    }
}

#[test]
fn softmax_gradient_matches_jacobian() {
    // d Σ_j w_j·softmax(x)_j / dx_i = p_i (w_i - Σ_j w_j p_j).
    let x = [0.3f32, -1.2, 2.0, 0.0];
    let w = [1.0f32, -2.0, 0.5, 3.0];
    let t = Tensor::from(x).requires_grad();
    (t.softmax::<Axis<0>>() * Tensor::from(w)).sum_all().backward();
    let grad = t.grad().unwrap().to_vec();
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let l = lse64(&x64);
    let p: Vec<f64> = x64.iter().map(|v| (v - l).exp()).collect();
    let wp: f64 = p.iter().zip(&w).map(|(p, &w)| p * w as f64).sum();
    let want: Vec<f64> = p.iter().zip(&w).map(|(p, &w)| p * (w as f64 - wp)).collect();
    assert_close(&grad, &want, |_| 32.0 * EPS * 3.0, "softmax grad");
}

#[test]
fn argmax_rows_takes_the_first_maximum() {
    let data = random_matrix(8, 5, 1.0, 8);
    let x = Tensor::<Rank2<8, 5>>::from_vec(data.clone(), Default::default()).unwrap();
    let want: Vec<usize> = data
        .chunks(5)
        .map(|r| (0..5).fold(0, |best, i| if r[i] > r[best] { i } else { best }))
        .collect();
    assert_eq!(x.argmax_rows(), want);
    assert_eq!(
        Tensor::from([[1.0, 3.0, 3.0], [-1.0, -1.0, -1.0]]).argmax_rows(),
        vec![1, 0]
    );
    let dynamic = Tensor::from_vec(vec![0.0, 1.0, 5.0, 2.0], (2usize, Const::<2>)).unwrap();
    assert_eq!(dynamic.argmax_rows(), vec![1, 0]);
}

#[test]
fn label_smoothing_matches_pytorch_and_f64() {
    use teenygrad::tensor::cross_entropy_with_label_smoothing as smoothed;
    let logits = Tensor::from([
        [0.5, -1.0, 2.0, 0.25],
        [3.0, 0.0, -2.0, 1.5],
        [-0.75, 0.125, 0.0, -3.0],
    ]);
    let labels = Labels::new(vec![2, 0, 3], Const::<3>).unwrap();
    // PyTorch 2.5.1's `F.cross_entropy(x, y, label_smoothing=ε)` and its gradient (first row).
    let torch = [
        (
            0.1,
            1.5922677516937256,
            [
                0.043078262358903885,
                0.003138144500553608,
                -0.0779225081205368,
                0.031706057488918304,
            ],
        ),
        (
            0.3,
            1.7151844501495361,
            [
                0.026411600410938263,
                -0.013528521172702312,
                -0.027922503650188446,
                0.015039396472275257,
            ],
        ),
        (
            1.0,
            2.145392656326294,
            [
                -0.031921736896038055,
                -0.07186185568571091,
                0.14707748591899872,
                -0.04329393804073334,
            ],
        ),
    ];
    let rows = rows_of(&logits.to_vec(), 4);
    for (eps, loss_want, grad_want) in torch {
        let x = logits.clone().requires_grad();
        let loss = smoothed(&x, &labels, eps).unwrap();
        // f64: the same formula, `(1 − ε)·(lse − x_label) + (ε/C)·(C·lse − Σ x)`, row by row.
        let exact: f64 = (rows.iter().zip([2, 0, 3]))
            .map(|(r, l)| {
                let lse = lse64(r);
                let e = eps as f64;
                (1.0 - e) * (lse - r[l]) + e / 4.0 * (4.0 * lse - r.iter().sum::<f64>())
            })
            .sum::<f64>()
            / 3.0;
        // A few roundings per term over terms below 10 in size: 16ε of the loss's scale.
        assert!(
            (loss.item() as f64 - exact).abs() <= 16.0 * EPS * exact,
            "ε {eps}: {} vs {exact}",
            loss.item()
        );
        assert!(
            (loss.item() as f64 - loss_want).abs() <= 4.0 * EPS * loss_want,
            "ε {eps}: PyTorch {loss_want}"
        );
        loss.backward();
        let g = x.grad().unwrap().to_vec();
        for (got, want) in g[..4].iter().zip(grad_want) {
            // softmax (a few ulps) minus the target, over 3: a few ulps of the larger term.
            assert!(
                (*got as f64 - want).abs() <= 8.0 * EPS * 0.4,
                "ε {eps}: {got} vs PyTorch {want}"
            );
        }
    }
}

#[test]
fn label_smoothing_edges() {
    use teenygrad::tensor::cross_entropy_with_label_smoothing as smoothed;
    let mut rng = StdRng::seed_from_u64(12);
    let logits = Tensor::<Rank2<6, 5>>::randn(&mut rng);
    let labels = Labels::new((0..6).map(|_| rng.random_range(0..5)).collect(), Const::<6>).unwrap();
    // No smoothing is the plain loss, bit for bit, gradient too.
    let (a, b) = (logits.clone().requires_grad(), logits.clone().requires_grad());
    let (plain, none) = (
        cross_entropy(&a, &labels).unwrap(),
        smoothed(&b, &labels, 0.0).unwrap(),
    );
    assert_eq!(plain.item().to_bits(), none.item().to_bits());
    plain.backward();
    none.backward();
    assert_eq!(a.grad().unwrap().to_vec(), b.grad().unwrap().to_vec());
    // Full smoothing ignores the labels: the mean over rows of −mean_c log_softmax.
    let other = Labels::new(vec![0; 6], Const::<6>).unwrap();
    let (u1, u2) = (
        smoothed(&logits, &labels, 1.0).unwrap(),
        smoothed(&logits, &other, 1.0).unwrap(),
    );
    let by_hand = -logits.log_softmax::<Axis<1>>().mean_all().item();
    assert!((u1.item() - by_hand).abs() <= 4.0 * f32::EPSILON * by_hand);
    assert!((u1.item() - u2.item()).abs() <= 4.0 * f32::EPSILON * by_hand);
    // Every logit enters the loss: a masked one makes it infinite, as PyTorch's.
    let masked = Tensor::from([[0.0, f32::NEG_INFINITY, 1.0]]);
    let one = Labels::new(vec![0], Const::<1>).unwrap();
    assert_eq!(smoothed(&masked, &one, 0.1).unwrap().item(), f32::INFINITY);
    // A smoothing outside [0, 1] is an error naming it.
    for eps in [-0.1, 1.5, f32::NAN] {
        match smoothed(&logits, &labels, eps) {
            Err(Error::InvalidArgument {
                op: "cross_entropy",
                message,
            }) => {
                assert_eq!(message, format!("smoothing = {eps} is not in [0, 1]"))
            }
            other => panic!("{eps}: {:?}", other.map(|l| l.item())),
        }
    }
}

#[test]
fn labels_for_rows_take_the_logits_batch_type() {
    // A static batch: `Labels<Const<2>>` without naming it; a run-time one: `Labels<usize>`.
    let logits = Tensor::from([[0.0, 1.0], [2.0, -1.0]]);
    let labels = Labels::for_rows(&logits, vec![1, 0]).unwrap();
    let named = Labels::new(vec![1, 0], Const::<2>).unwrap();
    assert_eq!(labels, named);
    let rows = Tensor::<(usize, Const<2>)>::zeros_in((3, Const));
    let labels: Labels<usize> = Labels::for_rows(&rows, vec![0, 1, 1]).unwrap();
    assert_eq!(labels.indices(), [0, 1, 1]);
    match Labels::for_rows(&rows, vec![0]) {
        Err(Error::ShapeMismatch { op, lhs, rhs, .. }) => {
            assert_eq!((op, lhs, rhs), ("Labels::for_rows", vec![1], vec![3]))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cross_entropy_per_sample_matches_pytorch_reduction_none() {
    use teenygrad::tensor::cross_entropy_per_sample;
    let logits = Tensor::from([
        [0.5, -1.0, 2.0, 0.25],
        [3.0, 0.0, -2.0, 1.5],
        [-0.75, 0.125, 0.0, -3.0],
    ]);
    let labels = Labels::for_rows(&logits, vec![2, 0, 3]).unwrap();
    // PyTorch 2.5.1's `F.cross_entropy(x, y, reduction="none")`, and the gradient of its sum
    // weighted by [1, −2, 0.5].
    let torch = [0.36927908658981323, 0.24659067392349243, 3.9765584468841553];
    let torch_grad = [
        [
            0.15423479676246643,
            0.03441443666815758,
            -0.30876755714416504,
            0.12011818587779999,
        ],
        [
            0.43707895278930664,
            -0.07781326025724411,
            -0.010530879721045494,
            -0.3487348258495331,
        ],
        [
            0.08894780278205872,
            0.21337468922138214,
            0.18830250203609467,
            -0.49062496423721313,
        ],
    ];
    let x = logits.clone().requires_grad();
    let each = cross_entropy_per_sample(&x, &labels).unwrap();
    let rows = rows_of(&logits.to_vec(), 4);
    for ((got, want), (row, label)) in each.to_vec().iter().zip(torch).zip(rows.iter().zip([2, 0, 3])) {
        // Each row's loss within a few ulps of f64 and of PyTorch's.
        let exact = lse64(row) - row[label];
        assert!(
            (*got as f64 - exact).abs() <= 4.0 * EPS * exact.max(1.0),
            "{got} vs {exact}"
        );
        assert!(
            (*got as f64 - want).abs() <= 4.0 * EPS * want.max(1.0),
            "{got} vs PyTorch {want}"
        );
    }
    (each * Tensor::from([1.0, -2.0, 0.5])).sum_all().backward();
    let grad = x.grad().unwrap().to_vec();
    for (got, want) in grad.iter().zip(torch_grad.iter().flatten()) {
        // (softmax − one_hot) times a weight of at most 2: a few ulps of 2.
        assert!(
            (*got as f64 - want).abs() <= 8.0 * EPS * 2.0,
            "{got} vs PyTorch {want}"
        );
    }
    // Their mean is the mean loss, and a run-time batch works the same.
    let mean = cross_entropy(&logits, &labels).unwrap().item();
    let of_each = cross_entropy_per_sample(&logits, &labels)
        .unwrap()
        .mean_all()
        .item();
    assert!((mean - of_each).abs() <= 4.0 * f32::EPSILON * mean);
    let dynamic = logits.reshape_to((3usize, Const::<4>));
    let each = dynamic
        .cross_entropy_per_sample(&Labels::from_vec(vec![2, 0, 3]))
        .unwrap();
    assert_eq!(each.dims(), vec![3]);
    // An empty batch gives no losses, and a bad label the same error as the mean's.
    let none = Tensor::<(usize, Const<4>)>::zeros_in((0, Const));
    assert_eq!(
        none.cross_entropy_per_sample(&Labels::from_vec(vec![]))
            .unwrap()
            .to_vec(),
        vec![]
    );
    assert!(matches!(
        cross_entropy_per_sample(&logits, &Labels::for_rows(&logits, vec![0, 4, 1]).unwrap()),
        Err(Error::Data { .. })
    ));
}
