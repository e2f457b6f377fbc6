use teenygrad::prelude::*;

fn main() {
    let batch = Tensor::zeros_in((4usize, Const::<3>));
    let fixed = Tensor::<Rank2<4, 3>>::zeros();
    let _ = batch - fixed;
}
