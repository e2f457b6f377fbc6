use teenygrad::nn::{Init, Linear, Module};
use teenygrad::prelude::*;
use rand::SeedableRng;

fn main() {
    let layer = Linear::<16, 4>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
    let (a, b) = (Tensor::<Rank2<2, 8>>::zeros(), Tensor::<Rank2<2, 8>>::ones());
    let _ = layer.forward(a.cat(&b, Axis::<1>));
}
