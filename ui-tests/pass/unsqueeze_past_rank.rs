use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let _: Tensor<(Const<2>, Const<3>, One)> = a.unsqueeze(Axis::<2>);
}
