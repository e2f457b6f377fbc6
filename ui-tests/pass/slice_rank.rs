use teenygrad::prelude::*;

fn main() {
    let m = Tensor::from([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let row = m.slice::<Rank2<1, 3>>(&[1, 0]).unwrap().reshape::<Rank1<3>>();
    assert_eq!(row.to_array(), [4.0, 5.0, 6.0]);
}
