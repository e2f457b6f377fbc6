use teenygrad::prelude::*;

fn main() {
    let norm = LayerNorm::<4>::new();
    let y = norm.forward(Tensor::<Rank2<2, 4>>::zeros());
    assert_eq!(y.dims(), vec![2, 4]);
}
