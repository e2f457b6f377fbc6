use teenygrad::prelude::*;
use teenygrad::nn::{Init, Linear, Module};
use rand::SeedableRng;

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let first = Linear::<32, 48>::init(&mut rng);
    let second = Linear::<64, 128>::init(&mut rng);
    let _ = second.forward(first.forward(Tensor::<Rank2<8, 32>>::zeros()));
}
