use teenygrad::prelude::*;

fn main() {
    let row = Tensor::<Rank1<3>>::zeros();
    let _ = row.broadcast::<Rank2<2, 3>>();
}
