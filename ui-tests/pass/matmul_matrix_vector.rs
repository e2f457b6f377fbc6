use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<4, 5>>::zeros();
    let v = Tensor::<Rank1<5>>::zeros();
    let _ = m.matmul(&v);
}
