use teenygrad::prelude::*;

fn main() {
    let t = Tensor::<Rank3<2, 3, 4>>::zeros();
    let _ = t.permute::<Axes3<0, 2, 1>>();
}
