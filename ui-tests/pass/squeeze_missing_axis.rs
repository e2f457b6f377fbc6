use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank3<2, 3, 1>>::zeros();
    let _: Tensor<Rank2<2, 3>> = a.squeeze(Axis::<2>);
}
