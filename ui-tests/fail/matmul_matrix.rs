use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let b = Tensor::<Rank2<4, 5>>::zeros();
    let _ = a.matmul(&b);
}
