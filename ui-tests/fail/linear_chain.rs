use teenygrad::prelude::*;
use teenygrad::nn::{Init, Linear, Module, Relu};
use rand::SeedableRng;

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let model = <(Linear<32, 64>, Relu, Linear<128, 10>)>::init(&mut rng);
    let _ = model.forward(Tensor::<Rank2<8, 32>>::zeros());
}
