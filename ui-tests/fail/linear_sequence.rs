use teenygrad::prelude::*;
use teenygrad::nn::{Init, Linear, Module};
use rand::SeedableRng;

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let layer = Linear::<16, 8>::init(&mut rng);
    // A batch of 4 sequences of 10 positions, with 12 features where the layer takes 16.
    let _ = layer.forward(Tensor::<Rank3<4, 10, 12>>::zeros());
}
