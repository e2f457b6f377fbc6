use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::zeros();
    let _ = m.permute::<Axes2<0, 2>>();
}
