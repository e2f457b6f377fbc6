use teenygrad::prelude::*;

fn main() {
    let v = Tensor::from([1.0, 2.0, 3.0]);
    assert_eq!(v.unsqueeze(Axis::<1>).t().to_vec(), vec![1.0, 2.0, 3.0]);
    let k = Tensor::<Rank4<2, 4, 10, 8>>::zeros();
    assert_eq!(k.t().dims(), vec![2, 4, 8, 10]);
}
