use teenygrad::prelude::*;

fn main() {
    let norm = LayerNorm::<5>::new();
    let _ = norm.forward(Tensor::<Rank2<2, 4>>::zeros());
}
