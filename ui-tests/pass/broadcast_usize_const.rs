use teenygrad::shape::{BroadcastShape, Const, One, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add((32usize, Const::<3>), (32usize, Const::<3>));
    add((32usize, Const::<3>), (One, Const::<3>));
}
