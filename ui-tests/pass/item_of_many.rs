//! The fix: reduce first, or read a tensor whose every dim is a static 1.
use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([[1.0, 2.0], [3.0, 4.0]]);
    assert_eq!(x.sum_all().item(), 10.0);
    let one: Tensor<(Const<1>, One, Const<1>)> = Tensor::from([[[2.5]]]).reshape();
    assert_eq!(one.item(), 2.5);
}
