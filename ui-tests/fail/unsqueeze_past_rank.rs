use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 3>>::zeros();
    let _ = a.unsqueeze(Axis::<3>);
}
