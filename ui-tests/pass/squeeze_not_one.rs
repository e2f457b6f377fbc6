use teenygrad::prelude::*;

fn main() {
    let a = Tensor::<Rank2<2, 1>>::zeros();
    let _: Tensor<Rank1<2>> = a.squeeze(Axis::<1>);
    let _: Tensor<Rank1<2>> = a.sum_keepdim::<Axis<1>>().squeeze(Axis::<1>);
}
