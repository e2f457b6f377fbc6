use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::ones();
    assert_eq!(m.sum::<Axes2<0, 1>>().item(), 6.0);
}
