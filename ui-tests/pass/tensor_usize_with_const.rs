use teenygrad::prelude::*;

fn main() {
    let batch = Tensor::zeros_in((4usize, Const::<3>));
    let row = Tensor::<Rank1<3>>::zeros();
    let _ = batch - row;
}
