use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank3<8, 2, 3>>::zeros();
    let b = Tensor::<Rank3<8, 3, 5>>::zeros();
    let _ = a.matmul(&b);
}
