use teenygrad::shape::{BroadcastTo, Rank2, Rank3, Shape};

fn expand<S: BroadcastTo<D>, D: Shape>(_: S, _: D) {}

fn main() {
    expand(Rank2::<2, 3>::default(), Rank3::<4, 3, 3>::default());
}
