use teenygrad::shape::{BroadcastShape, Const, One, Rank3, Shape};

fn add<A: BroadcastShape<B>, B: Shape>(_: A, _: B) {}

fn main() {
    add(Rank3::<2, 3, 4>::default(), Rank3::<2, 3, 4>::default());
    add(Rank3::<2, 3, 4>::default(), (One, Const::<4>));
}
