use teenygrad::shape::{Axes, Axes3, Const, PermuteShape, Rank3};

fn permute<Ax: Axes, S: PermuteShape<Ax>>(s: S) -> S::Output {
    s.permuted()
}

fn main() {
    let p = permute::<Axes3<2, 1, 0>, _>(Rank3::<2, 3, 4>::default());
    assert_eq!(p, (Const::<4>, Const::<3>, Const::<2>));
}
