use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::zeros();
    let row = Tensor::<Rank1<3>>::ones();
    let _ = m.cat(&row, Axis::<0>);
}
