//! Joining tensors along an axis (`cat`, `cat_in`): values against a plain-loop join, bit for
//! bit; every rank and axis; empty and size-1 parts; run-time dims; errors; gradients by hand.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::prelude::*;

/// `a` then `b` along `axis`, row-major, by plain loops over the dims before, at and after it.
fn joined_by_hand(a: &[f32], a_dims: &[usize], b: &[f32], b_dims: &[usize], axis: usize) -> Vec<f32> {
    let outer: usize = a_dims[..axis].iter().product();
    let inner: usize = a_dims[axis + 1..].iter().product();
    let (na, nb) = (a_dims[axis] * inner, b_dims[axis] * inner);
    let mut out = Vec::new();
    for o in 0..outer {
        out.extend_from_slice(&a[o * na..(o + 1) * na]);
        out.extend_from_slice(&b[o * nb..(o + 1) * nb]);
    }
    out
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn cat_by_hand_along_rows_and_columns() {
    let a = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    let b = Tensor::from([[5.0, 6.0]]);
    assert_eq!(a.cat(&b, Axis::<0>).to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(a.cat(&b, Axis::<0>).dims(), vec![3, 2]);
    let c = Tensor::from([[7.0], [8.0]]);
    assert_eq!(a.cat(&c, Axis::<1>).to_vec(), vec![1.0, 2.0, 7.0, 3.0, 4.0, 8.0]);
    // Rank 1, and three parts by two joins.
    let v = Tensor::from([1.0]).cat(&Tensor::from([2.0, 3.0]), Axis::<0>);
    assert_eq!(
        v.cat(&Tensor::from([4.0]), Axis::<0>).to_vec(),
        vec![1.0, 2.0, 3.0, 4.0]
    );
}

#[test]
fn values_are_copied_bit_for_bit() {
    let specials = Tensor::from([-0.0, f32::NAN, f32::NEG_INFINITY, f32::MIN_POSITIVE / 2.0]);
    let others = Tensor::from([0.0, -f32::NAN, f32::INFINITY, -0.0]);
    let got = specials.cat(&others, Axis::<0>).to_vec();
    let want: Vec<f32> = specials.to_vec().into_iter().chain(others.to_vec()).collect();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn every_axis_of_ranks_one_to_four_matches_a_plain_loop() {
    let mut rng = StdRng::seed_from_u64(21);
    macro_rules! check {
        ($a:ty, $b:ty, $axis:literal) => {{
            let (a, b) = (Tensor::<$a>::randn(&mut rng), Tensor::<$b>::randn(&mut rng));
            let got = a.cat(&b, Axis::<$axis>);
            let want = joined_by_hand(&a.to_vec(), &a.dims(), &b.to_vec(), &b.dims(), $axis);
            assert_eq!(
                got.to_vec(),
                want,
                "{} and {} along {}",
                stringify!($a),
                stringify!($b),
                $axis
            );
            let mut dims = a.dims();
            dims[$axis] += b.dims()[$axis];
            assert_eq!(got.dims(), dims);
        }};
    }
    check!(Rank1<3>, Rank1<5>, 0);
    check!(Rank2<2, 3>, Rank2<4, 3>, 0);
    check!(Rank2<2, 3>, Rank2<2, 1>, 1);
    check!(Rank3<2, 3, 4>, Rank3<1, 3, 4>, 0);
    check!(Rank3<2, 3, 4>, Rank3<2, 5, 4>, 1);
    check!(Rank3<2, 3, 4>, Rank3<2, 3, 2>, 2);
    check!(Rank4<1, 2, 3, 2>, Rank4<1, 2, 1, 2>, 2);
    check!(Rank4<1, 2, 3, 2>, Rank4<1, 2, 3, 3>, 3);
}

#[test]
fn views_join_as_their_values() {
    // A transposed and a sliced input, and a pending one.
    let mut rng = StdRng::seed_from_u64(22);
    let a = Tensor::<Rank2<4, 3>>::randn(&mut rng).t();
    let b = Tensor::<Rank2<5, 6>>::randn(&mut rng)
        .slice::<Rank2<3, 2>>(&[1, 3])
        .unwrap()
        .exp();
    let got = a.cat(&b, Axis::<1>).to_vec();
    assert_eq!(got, joined_by_hand(&a.to_vec(), &[3, 4], &b.to_vec(), &[3, 2], 1));
}

#[test]
fn empty_and_size_one_parts() {
    let a = Tensor::from([[1.0, 2.0]]);
    let none = Tensor::<(usize, Const<2>)>::zeros_in((0, Const));
    assert_eq!(a.cat(&none, Axis::<0>).to_vec(), vec![1.0, 2.0]);
    assert_eq!(none.cat(&a, Axis::<0>).to_vec(), vec![1.0, 2.0]);
    let both = none.cat(&none, Axis::<0>);
    assert_eq!((both.dims(), both.to_vec()), (vec![0, 2], vec![]));
    // Joining along a size-1 axis of one-element tensors.
    let one = Tensor::from([[3.0]]);
    assert_eq!(one.cat(&one, Axis::<1>).to_vec(), vec![3.0, 3.0]);
}

#[test]
fn run_time_batches_join_and_mismatches_are_errors() {
    let a = Tensor::<(usize, Const<2>)>::ones_in((3, Const));
    let b = Tensor::<(usize, Const<2>)>::zeros_in((2, Const));
    let batch = a.cat(&b, Axis::<0>);
    assert_eq!(batch.dims(), vec![5, 2]);
    // Along a static axis, run-time batches must agree.
    let e = a.try_cat(&b, Axis::<1>).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cat: shapes [3, 2] and [2, 2] are incompatible (every dim but the joined axis must agree)"
    );
    let same = a.cat(&a, Axis::<1>);
    assert_eq!((same.dims(), same.to_vec()), (vec![3, 4], vec![1.0; 12]));
    // A named joined dim must be the sum.
    let static_rows: Tensor<Rank2<2, 3>> =
        Tensor::<Rank2<2, 1>>::zeros().cat_in(&Tensor::<Rank2<2, 2>>::ones(), Axis::<1>, Const::<3>);
    assert_eq!(static_rows.to_array(), [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]);
    match Tensor::<Rank2<2, 1>>::zeros().try_cat_in(&Tensor::<Rank2<2, 2>>::ones(), Axis::<1>, Const::<4>) {
        Err(Error::ShapeMismatch { op, lhs, rhs, rule }) => {
            assert_eq!((op, lhs, rhs), ("cat", vec![2, 3], vec![2, 4]));
            assert!(
                rule.contains("the inputs joined") && rule.contains("the size `n` names"),
                "{rule}"
            );
        }
        other => panic!("{:?}", other.map(|t| t.dims())),
    }
    // Joined sizes that add up past usize: the inputs named, not a sum that could not be formed.
    let huge = Tensor::<(usize,)>::try_zeros_in((usize::MAX - 1,)).unwrap();
    let e = huge
        .try_cat(&Tensor::<(usize,)>::zeros_in((5,)), Axis::<0>)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cat: shapes [{}] and [5] are incompatible (the joined axis's sizes add up past usize)",
            usize::MAX - 1
        )
    );
}

#[test]
fn each_part_gets_its_slice_of_the_gradient() {
    let a = Tensor::from([[1.0, 2.0], [3.0, 4.0]]).requires_grad();
    let b = Tensor::from([[5.0], [6.0]]).requires_grad();
    let weights = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    (a.cat_in(&b, Axis::<1>, Const::<3>) * weights)
        .sum_all()
        .backward();
    assert_eq!(a.grad().unwrap().to_array(), [[1.0, 2.0], [4.0, 5.0]]);
    assert_eq!(b.grad().unwrap().to_array(), [[3.0], [6.0]]);
    // A tensor joined to itself gets both parts; an untracked part gets nothing and leaves the
    // result tracked.
    let x = Tensor::from([1.0, -2.0]).requires_grad();
    let y: Tensor<(usize,), Tracked> = x.cat(&x, Axis::<0>).cat(&Tensor::from([9.0]), Axis::<0>);
    (y.clone() * Tensor::from_vec(vec![1.0, 10.0, 100.0, 1000.0, 0.0], (5,)).unwrap())
        .sum_all()
        .backward();
    assert_eq!(x.grad().unwrap().to_array(), [101.0, 1010.0]);
}

#[test]
fn a_repeated_join_replays_its_plan() {
    use teenygrad::lazy::stats;
    let (a, b) = (
        Tensor::<Rank2<3, 2>>::ones().realize(),
        Tensor::<Rank2<3, 1>>::zeros().realize(),
    );
    let step = || (a.cat(&b, Axis::<1>) * 2.0).to_vec();
    let first = step();
    stats::reset();
    assert_eq!(step(), first);
    assert_eq!(stats::get().schedules_reused, 1, "{:?}", stats::get());
    assert_eq!(first, [2.0, 2.0, 0.0].repeat(3));
}
