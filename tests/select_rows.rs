//! Selecting rows by index (`Tensor::select_rows`): values against the table read by hand through
//! every kind of view, the gradient against sums written out by hand and in f64, boundaries (no
//! indices, no features, one row), errors, and replays. Then one column per row
//! (`gather_columns`) and the negative log-likelihood built on it.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::Error;
use teenygrad::lazy::{reference, stats};
use teenygrad::prelude::*;

/// Row `r` of a row-major `[v, d]`.
fn row(values: &[f32], d: usize, r: usize) -> &[f32] {
    &values[r * d..(r + 1) * d]
}

/// The rows of `table` at `indices`, copied by hand.
fn picked<V: Dim, D: Dim, G: GradMode>(table: &Tensor<(V, D), G>, indices: &[usize]) -> Vec<f32> {
    let (values, d) = (table.to_vec(), table.dims()[1]);
    indices
        .iter()
        .flat_map(|&r| row(&values, d, r).to_vec())
        .collect()
}

#[test]
fn rows_come_out_in_index_order_with_repeats() {
    let table = Tensor::from([
        [0.0, 1.0, 2.0],
        [10.0, 11.0, 12.0],
        [20.0, 21.0, 22.0],
        [-0.0, f32::NAN, f32::INFINITY],
    ]);
    let rows = table.select_rows(&[3, 1, 1, 0]).unwrap();
    assert_eq!(rows.dims(), vec![4, 3]);
    let got = rows.to_vec();
    // Copies, bit for bit: -0 keeps its sign, NaN stays NaN.
    let want = [
        -0.0,
        f32::NAN,
        f32::INFINITY,
        10.0,
        11.0,
        12.0,
        10.0,
        11.0,
        12.0,
        0.0,
        1.0,
        2.0,
    ];
    assert_eq!(got.map_bits(), want.map_bits());
    // A static batch gives a static shape; every row in order is the table itself.
    let all: Tensor<Rank2<4, 3>> = table.select_rows_in(Const::<4>, &[0, 1, 2, 3]).unwrap();
    assert_eq!(all.to_vec().map_bits(), table.to_vec().map_bits());
}

trait Bits {
    fn map_bits(&self) -> Vec<u32>;
}

impl Bits for [f32] {
    fn map_bits(&self) -> Vec<u32> {
        self.iter().map(|v| v.to_bits()).collect()
    }
}

#[test]
fn rows_are_read_through_any_view_of_the_table() {
    let mut rng = StdRng::seed_from_u64(11);
    let stored = Tensor::<Rank2<6, 5>>::randn(&mut rng);
    let indices = [5, 0, 2, 2, 4, 1, 5];
    // Stored; transposed (a column stride); padded (zeros outside, read element by element);
    // a block of a larger table; and pending (computed first).
    let transposed = Tensor::<Rank2<5, 6>>::randn(&mut rng).t();
    let padded = Tensor::<Rank2<6, 3>>::randn(&mut rng)
        .pad::<Rank2<6, 5>>(&[(0, 0), (1, 1)])
        .unwrap();
    let block = Tensor::<Rank2<8, 9>>::randn(&mut rng)
        .slice::<Rank2<6, 5>>(&[1, 2])
        .unwrap();
    let pending = stored.exp() * 2.0;
    for (what, table) in [
        ("stored", &stored),
        ("transposed", &transposed),
        ("padded", &padded),
        ("block", &block),
        ("pending", &pending),
    ] {
        let rows = table.select_rows(&indices).unwrap();
        // The f64 reference picks the same rows of its own table (before `to_vec`, which
        // realizes the graph).
        let (table64, rows64) = (
            reference::evaluate(&table.lazy()),
            reference::evaluate(&rows.lazy()),
        );
        let picked64: Vec<f64> = indices
            .iter()
            .flat_map(|&r| table64[r * 5..(r + 1) * 5].to_vec())
            .collect();
        assert_eq!(rows64, picked64, "{what}: the f64 reference");
        assert_eq!(rows.to_vec(), picked(table, &indices), "{what}");
    }
}

#[test]
fn empty_and_single_boundaries() {
    let table = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    let none = table.select_rows(&[]).unwrap();
    assert_eq!((none.dims(), none.to_vec()), (vec![0, 2], vec![]));
    // No features: rows of nothing, still one per index.
    let narrow = Tensor::<(usize, usize)>::zeros_in((3, 0));
    assert_eq!(narrow.select_rows(&[2, 0]).unwrap().dims(), vec![2, 0]);
    // A table of one row, read many times.
    let one = Tensor::from([[7.0, -7.0]]);
    assert_eq!(
        one.select_rows(&[0, 0, 0]).unwrap().to_vec(),
        [7.0, -7.0].repeat(3)
    );
    // The gradient of a selection of nothing is zero everywhere.
    let tracked = table.clone().requires_grad();
    tracked.select_rows(&[]).unwrap().sum_all().backward();
    assert_eq!(tracked.grad().unwrap().to_vec(), vec![0.0; 4]);
}

#[test]
fn bad_indices_are_errors_that_change_nothing() {
    let table = Tensor::from([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).requires_grad();
    let e = table.select_rows(&[0, 3, 1]).unwrap_err();
    assert_eq!(
        e,
        Error::IndexOutOfRange {
            op: "select_rows",
            position: 1,
            index: 3,
            len: 3
        }
    );
    assert_eq!(
        e.to_string(),
        "select_rows: index 3 (at position 1) is out of range for length 3"
    );
    let e = table.select_rows_in(Const::<2>, &[0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "select_rows: shapes [1] and [2] are incompatible (the number of indices (left) must be the \
         result's row count (right))"
    );
    // The table is as it was, and no gradient was recorded for it.
    assert_eq!(table.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert!(table.grad().is_none());
}

#[test]
fn the_gradient_adds_each_output_row_into_the_row_it_read() {
    let table = Tensor::<Rank2<4, 3>>::zeros().requires_grad();
    let indices = [2, 0, 2, 2];
    // Distinct weights per output element, each exactly representable, so every sum is exact.
    let w: Vec<f32> = (0..12).map(|k| (k as f32 + 1.0) * 0.25).collect();
    let weights = Tensor::from_vec(w.clone(), (4usize, Const::<3>)).unwrap();
    (table.select_rows(&indices).unwrap() * weights)
        .sum_all()
        .backward();
    let grad = table.grad().unwrap().to_vec();
    let mut want = vec![0.0f32; 12];
    for (i, &r) in indices.iter().enumerate() {
        for j in 0..3 {
            want[r * 3 + j] += w[i * 3 + j];
        }
    }
    // Rows 1 and 3 were read by nothing: exactly 0.
    assert_eq!(grad, want);
    assert_eq!(row(&grad, 3, 1), [0.0; 3]);
    assert_eq!(
        row(&grad, 3, 2),
        [0.25 + 1.75 + 2.5, 0.5 + 2.0 + 2.75, 0.75 + 2.25 + 3.0]
    );
}

#[test]
fn gradients_reach_a_table_used_twice_and_through_a_view() {
    // The table is read by the selection and directly; it is a transposed view of the leaf.
    let leaf = Tensor::<Rank2<3, 5>>::randn(&mut StdRng::seed_from_u64(3)).requires_grad();
    let table = leaf.t();
    let loss = table.select_rows(&[4, 4, 1]).unwrap().sum_all() + table.sum_all() * 2.0;
    loss.backward();
    // d/d table[r, c] = 2 + (times r was picked); the leaf's is its transpose.
    let counts = [0.0, 1.0, 0.0, 0.0, 2.0];
    let want: Vec<f32> = (0..3).flat_map(|_| counts.iter().map(|c| c + 2.0)).collect();
    assert_eq!(leaf.grad().unwrap().to_vec(), want);
}

#[test]
fn gradients_accumulate_in_order_over_random_cases() {
    // Against sums in f64: each gradient row is the sum, in index order, of the output rows that
    // read it, so it is the f64 sum rounded once per addition (at most `k - 1` roundings of
    // values up to `k`, each within half an ulp of the running sum): bound `k · 2⁻²⁴ · Σ|g|`.
    let mut rng = StdRng::seed_from_u64(5);
    for case in 0..20 {
        let (v, d, n) = (
            rng.random_range(1..9),
            rng.random_range(1..7),
            rng.random_range(0..40),
        );
        let indices: Vec<usize> = (0..n).map(|_| rng.random_range(0..v)).collect();
        let g: Vec<f32> = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let table = Tensor::<(usize, usize)>::zeros_in((v, d)).requires_grad();
        let weights = Tensor::from_vec(g.clone(), (n, d)).unwrap();
        (table.select_rows(&indices).unwrap() * weights)
            .sum_all()
            .backward();
        let grad = table.grad().unwrap().to_vec();
        for r in 0..v {
            for c in 0..d {
                let terms: Vec<f64> = (0..n)
                    .filter(|&i| indices[i] == r)
                    .map(|i| g[i * d + c] as f64)
                    .collect();
                let want: f64 = terms.iter().sum();
                let bound = terms.len() as f64 * f32::EPSILON as f64 / 2.0
                    * terms.iter().map(|t| t.abs()).sum::<f64>();
                let got = grad[r * d + c] as f64;
                assert!(
                    (got - want).abs() <= bound,
                    "case {case}: [{r}, {c}] {got} against {want}"
                );
            }
        }
    }
}

#[test]
fn a_repeated_step_replays_with_its_own_indices() {
    let table = Tensor::<Rank1<10>>::arange().reshape::<Rank2<5, 2>>();
    let step = |indices: &[usize]| (table.select_rows(indices).unwrap() + 1.0).to_vec();
    let _ = step(&[0, 1, 2]);
    stats::reset();
    let got = step(&[4, 0, 4]);
    assert_eq!(stats::get().schedules_reused, 1, "{:?}", stats::get());
    assert_eq!(got, vec![9.0, 10.0, 1.0, 2.0, 9.0, 10.0]);
}

#[test]
fn gather_columns_picks_each_rows_label_and_sends_the_gradient_back_there() {
    let x = Tensor::from([[0.1, 0.9, -3.0], [0.7, 0.3, f32::INFINITY]]).requires_grad();
    let labels = Labels::new(vec![1, 2], Const::<2>).unwrap();
    let picked = x.gather_columns(&labels).unwrap();
    assert_eq!(picked.to_array(), [0.9, f32::INFINITY]);
    // An upstream NaN reaches only its own entry: the rest of the row gets 0, not NaN.
    (picked * Tensor::from([2.0, f32::NAN])).sum_all().backward();
    let g = x.grad().unwrap().to_vec();
    assert_eq!(g[..5], [0.0, 2.0, 0.0, 0.0, 0.0]);
    assert!(g[5].is_nan());
    // Errors: a label out of range, labels for another batch.
    let e = x
        .gather_columns(&Labels::new(vec![0, 3], Const::<2>).unwrap())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "gather_columns: labels[1]: class 3 is out of range for 3 classes (labels count from 0: 0..=2)"
    );
    let runtime = Tensor::<(usize, Const<3>)>::zeros_in((2, Const));
    assert!(runtime.gather_columns(&Labels::from_vec(vec![0])).is_err());
}

#[test]
fn nll_loss_by_hand_and_beside_cross_entropy() {
    // −(−0.1 − 0.4 − 4.0)/3 = 1.5; each picked entry's gradient −1/3.
    let log_probs =
        Tensor::from([[-0.1, -2.4, -3.0], [-1.2, -0.4, -2.2], [-0.05, -3.5, -4.0]]).requires_grad();
    let labels = Labels::new(vec![0, 1, 2], Const::<3>).unwrap();
    let loss = teenygrad::tensor::nll_loss(&log_probs, &labels).unwrap();
    assert!((loss.item() - 1.5).abs() <= 2.0 * f32::EPSILON * 1.5);
    loss.backward();
    let third = -1.0f32 / 3.0;
    assert_eq!(
        log_probs.grad().unwrap().to_array(),
        [[third, 0.0, 0.0], [0.0, third, 0.0], [0.0, 0.0, third]]
    );
    // nll_loss of log_softmax is cross entropy: the same within a few ulps of the loss (the two
    // round the shifted logits and the log-sum-exp in other orders).
    let logits = Tensor::<Rank2<16, 10>>::randn(&mut StdRng::seed_from_u64(9));
    let labels = Labels::new((0..16).map(|i| (i * 7) % 10).collect(), Const::<16>).unwrap();
    let nll = teenygrad::tensor::nll_loss(&logits.log_softmax::<Axis<1>>(), &labels)
        .unwrap()
        .item();
    let ce = cross_entropy(&logits, &labels).unwrap().item();
    assert!((nll - ce).abs() <= 8.0 * f32::EPSILON * ce, "{nll} against {ce}");
    // A bad label names the method called, not the pick inside it.
    let bad = Labels::new(vec![0, 3, 1], Const::<3>).unwrap();
    let err = teenygrad::tensor::nll_loss(&log_probs, &bad).unwrap_err();
    assert!(err.to_string().starts_with("nll_loss: labels[1]"), "{err}");
    // An empty batch: the mean of nothing, NaN.
    let none = Tensor::<(usize, Const<3>)>::zeros_in((0, Const));
    assert!(
        teenygrad::tensor::nll_loss(&none, &Labels::from_vec(vec![]))
            .unwrap()
            .item()
            .is_nan()
    );
}
