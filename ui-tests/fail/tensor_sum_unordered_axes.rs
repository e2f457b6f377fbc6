use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::zeros();
    let _ = m.sum::<Axes2<1, 0>>();
}
