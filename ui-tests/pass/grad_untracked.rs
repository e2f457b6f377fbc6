use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0]).requires_grad();
    x.sum_all().backward();
    assert_eq!(x.grad().unwrap().to_array(), [1.0, 1.0]);
}
