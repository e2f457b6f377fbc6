use teenygrad::shape::{Axes, Axes3, PermuteShape, Rank3};

fn permute<Ax: Axes, S: PermuteShape<Ax>>(s: S) -> S::Output {
    s.permuted()
}

fn main() {
    permute::<Axes3<0, 1, 0>, _>(Rank3::<2, 3, 4>::default());
}
