use teenygrad::prelude::*;

fn main() {
    let t = Tensor::<Rank3<2, 3, 4>>::ones();
    assert_eq!(t.sum::<Axes2<1, 2>>().to_vec(), vec![12.0, 12.0]);
}
