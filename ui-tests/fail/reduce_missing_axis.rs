use teenygrad::shape::{Axes, Axes2, Axis, Rank2, ReduceShape};

fn sum<Ax: Axes, S: ReduceShape<Ax>>(_: S) {}

fn main() {
    sum::<Axis<2>, _>(Rank2::<2, 3>::default());
    sum::<Axes2<1, 2>, _>(Rank2::<2, 3>::default());
}
