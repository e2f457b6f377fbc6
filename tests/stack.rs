//! Stacking tensors along a new axis (`stack`, `stack_in`) and adding or removing a size-1 axis
//! (`unsqueeze`, `squeeze`): values against a plain-loop stack, bit for bit; every rank and
//! position; one, many and empty parts; run-time dims; errors; gradients by hand.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::prelude::*;

/// `parts` (each of dims `dims`, row-major) stacked along a new axis at `axis`, by plain loops:
/// for each index before the axis, each part's block of the dims after it in turn.
fn stacked_by_hand(parts: &[Vec<f32>], dims: &[usize], axis: usize) -> Vec<f32> {
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for part in parts {
            out.extend_from_slice(&part[o * inner..(o + 1) * inner]);
        }
    }
    out
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn stack_by_hand_along_each_position() {
    let a = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    let b = Tensor::from([[5.0, 6.0], [7.0, 8.0]]);
    let s0 = Tensor::stack([&a, &b], Axis::<0>);
    assert_eq!(s0.dims(), vec![2, 2, 2]);
    assert_eq!(s0.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let s1 = Tensor::stack([&a, &b], Axis::<1>);
    assert_eq!(s1.to_vec(), vec![1.0, 2.0, 5.0, 6.0, 3.0, 4.0, 7.0, 8.0]);
    let s2 = Tensor::stack([&a, &b], Axis::<2>);
    assert_eq!(s2.to_vec(), vec![1.0, 5.0, 2.0, 6.0, 3.0, 7.0, 4.0, 8.0]);
    // Scalars stack into a vector.
    let (x, y, z) = (Tensor::from(1.5), Tensor::from(-2.0), Tensor::from(0.25));
    let v: Tensor<Rank1<3>> = Tensor::stack_in([&x, &y, &z], Axis::<0>, Const::<3>);
    assert_eq!(v.to_array(), [1.5, -2.0, 0.25]);
}

#[test]
fn every_position_of_ranks_zero_to_three_matches_a_plain_loop() {
    let mut rng = StdRng::seed_from_u64(31);
    macro_rules! check {
        ($s:ty, $axis:literal) => {{
            // Counts that make every shape of the joining tree: one part, even and odd halves.
            for count in [1, 2, 3, 5, 8] {
                let parts: Vec<Tensor<$s>> = (0..count).map(|_| Tensor::randn(&mut rng)).collect();
                let got = Tensor::stack(&parts, Axis::<$axis>);
                let values: Vec<Vec<f32>> = parts.iter().map(|p| p.to_vec()).collect();
                let dims = parts[0].dims();
                let want = stacked_by_hand(&values, &dims, $axis);
                assert_eq!(
                    bits(&got.to_vec()),
                    bits(&want),
                    "{} at {} of {count}",
                    stringify!($s),
                    $axis
                );
                let mut want_dims = dims.clone();
                want_dims.insert($axis, count);
                assert_eq!(got.dims(), want_dims);
            }
        }};
    }
    check!(Rank0, 0);
    check!(Rank1<3>, 0);
    check!(Rank1<3>, 1);
    check!(Rank2<2, 3>, 0);
    check!(Rank2<2, 3>, 1);
    check!(Rank2<2, 3>, 2);
    check!(Rank3<2, 1, 3>, 0);
    check!(Rank3<2, 1, 3>, 1);
    check!(Rank3<2, 1, 3>, 2);
    check!(Rank3<2, 1, 3>, 3);
}

#[test]
fn views_pending_parts_and_repeats_stack_as_their_values() {
    let mut rng = StdRng::seed_from_u64(32);
    let a = Tensor::<Rank2<4, 3>>::randn(&mut rng).t();
    let b = Tensor::<Rank2<5, 6>>::randn(&mut rng)
        .slice::<Rank2<3, 4>>(&[1, 2])
        .unwrap()
        .exp();
    let parts = [&a, &b, &a];
    let got = Tensor::stack(parts, Axis::<1>).to_vec();
    let values: Vec<Vec<f32>> = parts.iter().map(|p| p.to_vec()).collect();
    assert_eq!(got, stacked_by_hand(&values, &[3, 4], 1));
}

#[test]
fn specials_are_copied_bit_for_bit() {
    let specials = Tensor::from([-0.0, f32::NAN, f32::NEG_INFINITY, f32::MIN_POSITIVE / 2.0]);
    let others = Tensor::from([0.0, -f32::NAN, f32::INFINITY, -0.0]);
    let got = Tensor::stack([&specials, &others], Axis::<1>).to_vec();
    let (s, o) = (specials.to_vec(), others.to_vec());
    let want: Vec<f32> = (0..4).flat_map(|i| [s[i], o[i]]).collect();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn parts_by_value_reference_or_iterator() {
    let rows: Vec<Tensor<Rank1<2>>> = (0..3).map(|i| Tensor::full(i as f32)).collect();
    let want = vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0];
    assert_eq!(Tensor::stack(&rows, Axis::<0>).to_vec(), want);
    assert_eq!(Tensor::stack(rows.iter(), Axis::<0>).to_vec(), want);
    assert_eq!(Tensor::stack(rows.clone(), Axis::<0>).to_vec(), want);
    let made = (0..3).map(|i| Tensor::<Rank1<2>>::full(i as f32));
    assert_eq!(Tensor::stack(made, Axis::<0>).to_vec(), want);
}

#[test]
fn many_and_empty_parts() {
    // 37 parts: an odd count at several levels of the tree.
    let parts: Vec<Tensor<Rank1<2>>> = (0..37).map(|i| Tensor::from([i as f32, -(i as f32)])).collect();
    let rows = Tensor::stack(&parts, Axis::<0>);
    assert_eq!(rows.dims(), vec![37, 2]);
    let want: Vec<f32> = (0..37).flat_map(|i| [i as f32, -(i as f32)]).collect();
    assert_eq!(rows.to_vec(), want);
    // Parts with no elements stack into a tensor with none.
    let none = Tensor::<(usize, Const<3>)>::zeros_in((0, Const));
    let stacked = Tensor::stack([&none, &none], Axis::<1>);
    assert_eq!((stacked.dims(), stacked.to_vec()), (vec![0, 2, 3], vec![]));
}

#[test]
fn run_time_dims_and_errors() {
    let a = Tensor::<(usize, Const<2>)>::ones_in((3, Const));
    let b = Tensor::<(usize, Const<2>)>::zeros_in((3, Const));
    let batch = Tensor::stack([&a, &b], Axis::<0>);
    assert_eq!(batch.dims(), vec![2, 3, 2]);
    // Run-time dims must agree; the error names the first part and the one that differs.
    let short = Tensor::<(usize, Const<2>)>::zeros_in((2, Const));
    let e = Tensor::try_stack([&a, &b, &short], Axis::<0>).unwrap_err();
    assert_eq!(
        e.to_string(),
        "stack: shapes [3, 2] and [2, 2] are incompatible (every part must have the same shape)"
    );
    // No parts: an error, not a guess at their shape.
    let empty: [&Tensor<Rank1<4>>; 0] = [];
    let e = Tensor::try_stack(empty, Axis::<0>).unwrap_err();
    assert!(matches!(e, Error::EmptyInput { op: "stack" }), "{e:?}");
    assert_eq!(e.to_string(), "stack: needs at least one tensor, got none");
    // A named new dim must be the number of parts.
    match Tensor::try_stack_in([&a, &b], Axis::<1>, Const::<3>) {
        Err(Error::ShapeMismatch { op, lhs, rhs, rule }) => {
            assert_eq!((op, lhs, rhs), ("stack", vec![3, 2, 2], vec![3, 3, 2]));
            assert!(
                rule.contains("the parts stacked") && rule.contains("the size `n` names"),
                "{rule}"
            );
        }
        other => panic!("{:?}", other.map(|t| t.dims())),
    }
}

#[test]
#[should_panic(expected = "stack: needs at least one tensor, got none")]
fn stack_of_nothing_panics_with_the_error() {
    let empty: Vec<Tensor<Rank1<4>>> = Vec::new();
    let _ = Tensor::stack(&empty, Axis::<0>);
}

#[test]
fn each_part_gets_its_slice_of_the_gradient() {
    let a = Tensor::from([1.0, 2.0]).requires_grad();
    let b = Tensor::from([3.0, 4.0]).requires_grad();
    let c = Tensor::from([5.0, 6.0]).requires_grad();
    let weights = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    // Along axis 1: the result's column k is part k.
    let s: Tensor<Rank2<2, 3>, Tracked> = Tensor::stack_in([&a, &b, &c], Axis::<1>, Const::<3>);
    (s * weights).sum_all().backward();
    assert_eq!(a.grad().unwrap().to_array(), [1.0, 4.0]);
    assert_eq!(b.grad().unwrap().to_array(), [2.0, 5.0]);
    assert_eq!(c.grad().unwrap().to_array(), [3.0, 6.0]);
    // A part given twice gets both slices.
    let x = Tensor::from([1.0, -2.0]).requires_grad();
    let y = Tensor::from([0.5, 0.5]).requires_grad();
    let s = Tensor::stack([&x, &y, &x], Axis::<0>);
    let w = Tensor::from_vec(vec![1.0, 10.0, 100.0, 1000.0, 2.0, 20.0], (3usize, Const::<2>)).unwrap();
    (s * w).sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [3.0, 30.0]);
    assert_eq!(y.grad().unwrap().to_array(), [100.0, 1000.0]);
}

#[test]
fn unsqueeze_adds_a_broadcasting_axis_and_squeeze_removes_it() {
    let x = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let u0: Tensor<(One, Const<2>, Const<3>)> = x.unsqueeze(Axis::<0>);
    let u1: Tensor<(Const<2>, One, Const<3>)> = x.unsqueeze(Axis::<1>);
    let u2: Tensor<(Const<2>, Const<3>, One)> = x.unsqueeze(Axis::<2>);
    for u in [u0.to_vec(), u1.to_vec(), u2.to_vec()] {
        assert_eq!(u, x.to_vec());
    }
    assert_eq!(
        (u0.dims(), u1.dims(), u2.dims()),
        (vec![1, 2, 3], vec![2, 1, 3], vec![2, 3, 1])
    );
    // The new axis broadcasts: each row minus its mean.
    let centered = &x - &x.mean::<Axis<1>>().unsqueeze(Axis::<1>);
    assert_eq!(centered.to_array(), [[-1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]]);
    // Squeeze takes `One` or `Const<1>` away, and undoes unsqueeze on a view.
    let t = x.t();
    assert_eq!(t.unsqueeze(Axis::<1>).squeeze(Axis::<1>).to_vec(), t.to_vec());
    let col: Tensor<Rank2<3, 1>> = Tensor::from([[7.0], [8.0], [9.0]]);
    assert_eq!(col.squeeze(Axis::<1>).to_array(), [7.0, 8.0, 9.0]);
    let scalar: Tensor<Rank0> = Tensor::from([5.0]).squeeze(Axis::<0>);
    assert_eq!(scalar.item(), 5.0);
    // Run-time dims keep their sizes around the new axis.
    let batch = Tensor::<(usize, Const<2>)>::ones_in((4, Const));
    let ub = batch.unsqueeze(Axis::<1>);
    assert_eq!(
        (ub.dims(), ub.shape()),
        (vec![4, 1, 2], (4usize, One, Const::<2>))
    );
}

#[test]
fn gradients_flow_through_unsqueeze_and_squeeze() {
    // Broadcasting the new axis sums the gradient over it.
    let v = Tensor::from([1.0, 2.0]).requires_grad();
    let wide: Tensor<Rank2<2, 3>, Tracked> = v.unsqueeze(Axis::<1>).broadcast();
    (wide * Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
        .sum_all()
        .backward();
    assert_eq!(v.grad().unwrap().to_array(), [6.0, 15.0]);
    let m = Tensor::from([[1.0], [2.0]]).requires_grad();
    (m.squeeze(Axis::<1>) * Tensor::from([3.0, -4.0]))
        .sum_all()
        .backward();
    assert_eq!(m.grad().unwrap().to_array(), [[3.0], [-4.0]]);
}
