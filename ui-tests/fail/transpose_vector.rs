use teenygrad::prelude::*;

fn main() {
    let v = Tensor::from([1.0, 2.0, 3.0]);
    let _ = v.t();
}
