use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let b = Tensor::<Rank2<3, 3>>::zeros();
    let _ = a.cat(&b, Axis::<1>);
}
