use teenygrad::prelude::*;

fn main() {
    let w = Tensor::from([1.0, 2.0]).requires_grad();
    let _ = (w * 2.0).requires_grad();
}
