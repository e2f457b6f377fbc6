use teenygrad::prelude::*;
use teenygrad::nn::{Init, Linear, Module};
use rand::SeedableRng;

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let layer = Linear::<16, 8>::init(&mut rng);
    let y: Tensor<Rank3<4, 10, 8>, Tracked> = layer.forward(Tensor::<Rank3<4, 10, 16>>::zeros());
    let _ = y;
}
