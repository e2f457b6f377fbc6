use teenygrad::prelude::*;

fn main() {
    let logits = Tensor::<(usize, Const<1>)>::zeros_in((3usize, Const::<1>));
    assert_eq!(logits.argmax_rows(), vec![0, 0, 0]);
}
