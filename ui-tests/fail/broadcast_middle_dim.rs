use teenygrad::shape::{BroadcastShape, Rank3, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add(Rank3::<2, 3, 4>::default(), Rank3::<2, 5, 4>::default());
}
