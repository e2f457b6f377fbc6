use teenygrad::nn::{Embedding, Init, Linear, Module};
use rand::SeedableRng;

fn main() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let model = <(Embedding<100, 16>, Linear<8, 2>)>::init(&mut rng);
    let _ = model.forward(&[3, 14, 15]);
}
