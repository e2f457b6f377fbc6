use teenygrad::shape::{BroadcastTo, Const, One, Rank3, Shape};

fn expand<S: BroadcastTo<D>, D: Shape>(_: S, _: D) {}

fn main() {
    expand((One, Const::<3>), Rank3::<4, 2, 3>::default());
}
