use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank3<2, 3, 4>>::zeros();
    let b = Tensor::<Rank3<2, 3, 4>>::zeros();
    let _ = a * b;
}
