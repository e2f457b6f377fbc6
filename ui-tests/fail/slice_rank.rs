use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::zeros();
    let _row = m.slice::<Rank1<3>>(&[1]);
}
