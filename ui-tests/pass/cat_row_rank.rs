use teenygrad::prelude::*;

fn main() {
    let m = Tensor::<Rank2<2, 3>>::zeros();
    let row = Tensor::<Rank1<3>>::ones();
    let joined = m.cat(&row.unsqueeze(Axis::<0>), Axis::<0>);
    assert_eq!(joined.dims(), vec![3, 3]);
}
