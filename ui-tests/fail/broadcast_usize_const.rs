use teenygrad::shape::{BroadcastShape, Const, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add((32usize, Const::<3>), (Const::<32>, Const::<3>));
}
