use teenygrad::prelude::*;

fn main() {
    let w = Tensor::from([1.0, 2.0]).requires_grad();
    let leaf = (w * 2.0).detach().requires_grad();
    leaf.sum_all().backward();
    assert_eq!(leaf.grad().unwrap().to_array(), [1.0, 1.0]);
}
