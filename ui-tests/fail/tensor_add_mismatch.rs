use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let b = Tensor::<Rank2<2, 4>>::zeros();
    let _ = a + b;
}
