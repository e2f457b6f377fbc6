use teenygrad::shape::{Axes, Axes2, Const, Rank3, ReduceShape};

fn sum<Ax: Axes, S: ReduceShape<Ax>>(s: S) -> S::Output {
    s.reduced()
}

fn main() {
    assert_eq!(sum::<Axes2<0, 1>, _>(Rank3::<2, 3, 4>::default()), (Const::<4>,));
}
