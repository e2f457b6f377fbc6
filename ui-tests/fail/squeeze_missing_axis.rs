use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 1>>::zeros();
    let _ = a.squeeze(Axis::<2>);
}
