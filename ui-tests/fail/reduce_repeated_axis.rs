use teenygrad::prelude::*;

fn main() {
    let t = Tensor::<Rank3<2, 3, 4>>::ones();
    let _ = t.sum::<Axes2<1, 1>>();
}
