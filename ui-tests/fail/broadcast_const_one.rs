use teenygrad::shape::{BroadcastShape, Rank2, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add(Rank2::<1, 3>::default(), Rank2::<4, 3>::default());
}
