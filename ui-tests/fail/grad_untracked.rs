use teenygrad::prelude::*;

fn main() {
    let x = Tensor::from([1.0, 2.0]);
    let _ = x.grad();
}
