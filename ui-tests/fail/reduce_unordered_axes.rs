use teenygrad::shape::{Axes, Axes2, Rank3, ReduceShape};

fn sum<Ax: Axes, S: ReduceShape<Ax>>(s: S) -> S::Output {
    s.reduced()
}

fn main() {
    sum::<Axes2<1, 0>, _>(Rank3::<2, 3, 4>::default());
}
