use teenygrad::shape::{Axes, Axes2, Axes3, PermuteShape, Rank2};

fn permute<Ax: Axes, S: PermuteShape<Ax>>(_: S) {}

fn main() {
    permute::<Axes2<0, 2>, _>(Rank2::<2, 3>::default());
    permute::<Axes3<0, 1, 2>, _>(Rank2::<2, 3>::default());
}
