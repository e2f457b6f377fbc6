use teenygrad::shape::{BroadcastShape, Const, One, Rank2, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add((One, Const::<3>), Rank2::<4, 3>::default());
}
