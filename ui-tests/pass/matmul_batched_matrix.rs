use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank3<8, 2, 3>>::zeros();
    let w = Tensor::<Rank2<3, 5>>::zeros();
    let _ = a.matmul(&w);
}
