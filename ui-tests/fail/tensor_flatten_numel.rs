use teenygrad::prelude::*;

fn main() {
    let t = Tensor::<Rank2<2, 3>>::zeros();
    let _ = t.flatten::<5>();
}
