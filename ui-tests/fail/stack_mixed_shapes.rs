use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let b = Tensor::<Rank2<3, 2>>::zeros();
    let _ = Tensor::stack([&a, &b], Axis::<0>);
}
