use teenygrad::prelude::*;

fn main() {
    let v = Tensor::<Rank1<4>>::zeros();
    let m = Tensor::<Rank2<4, 5>>::zeros();
    let _ = v.matmul(&m);
}
