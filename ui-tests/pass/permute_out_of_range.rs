use teenygrad::shape::{Axes, Axes2, PermuteShape, Rank2};

fn permute<Ax: Axes, S: PermuteShape<Ax>>(_: S) {}

fn main() {
    permute::<Axes2<1, 0>, _>(Rank2::<2, 3>::default());
}
