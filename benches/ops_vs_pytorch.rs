//! Everyday ops through the Tensor API, each built and realized on values already realized, timed
//! for `benches/compare_pytorch.py --ops`, which times the same ops in PyTorch (its `OPS` list has
//! the same names, in the same order) and prints the ratios. Run on its own, it prints each op's
//! time:
//!
//!     cargo bench --bench ops_vs_pytorch
//!
//! Each time is the fastest of five rounds of as many repetitions as fill about 20 ms.

use std::hint::black_box;
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::nn::{Detach, LayerNorm, Module};
use teenygrad::prelude::*;

/// An op's name, as `compare_pytorch.py` lists it, and a call that builds and realizes it.
type Op<'a> = (&'static str, Box<dyn Fn() + 'a>);

/// Seconds per call of `op`, the fastest of five rounds.
fn time(op: &dyn Fn()) -> f64 {
    op();
    let started = Instant::now();
    op();
    let once = started.elapsed().as_secs_f64().max(1e-7);
    let repetitions = ((0.02 / once) as usize).clamp(3, 20_000);
    (0..5)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..repetitions {
                op();
            }
            started.elapsed().as_secs_f64() / repetitions as f64
        })
        .fold(f64::INFINITY, f64::min)
}

/// The gradient of `Σ f(x)·w` with respect to `x`, from a fresh tracked copy of `x`: a layer's
/// forward and backward pass as training runs them.
fn input_gradient<F>(x: &Tensor<Rank2<1024, 1024>>, w: &Tensor<Rank2<1024, 1024>>, f: F)
where
    F: Fn(Tensor<Rank2<1024, 1024>, Tracked>) -> Tensor<Rank2<1024, 1024>, Tracked>,
{
    let x = x.clone().requires_grad();
    f(x.clone()).mul(w).sum_all().backward();
    drop(black_box(x.grad()));
}

fn main() {
    let mut rng = StdRng::seed_from_u64(7);
    let x = Tensor::<Rank2<1024, 1024>>::randn(&mut rng).realize();
    let y = Tensor::<Rank2<1024, 1024>>::randn(&mut rng).realize();
    let bias = Tensor::<Rank1<1024>>::randn(&mut rng).realize();
    let tall = Tensor::<Rank2<4096, 256>>::randn(&mut rng).realize();
    let small = Tensor::<Rank2<64, 256>>::randn(&mut rng).realize();
    let logits = Tensor::<Rank2<1024, 100>>::randn(&mut rng).realize();
    let labels = Labels::new((0..1024).map(|i| i * 37 % 100).collect(), Const).expect("labels in range");
    let norm = LayerNorm::<1024>::new().detached();
    // An embedding table and a batch of ids (repeats included), as an NLP step looks them up.
    let table = Tensor::<Rank2<10_000, 256>>::randn(&mut rng).realize();
    let ids: Vec<usize> = (0..4096).map(|i| i * 7919 % 10_000).collect();
    let rows_weight = Tensor::<(usize, Const<256>)>::randn_in((4096, Const), &mut rng).realize();
    let (left, right) = (
        Tensor::<Rank2<1024, 512>>::randn(&mut rng).realize(),
        Tensor::<Rank2<1024, 512>>::randn(&mut rng).realize(),
    );

    // Each op built and realized, its result dropped; names as in `compare_pytorch.py`'s `OPS`.
    macro_rules! op {
        ($name:literal, $tensor:expr) => {
            (
                $name,
                Box::new(|| drop(black_box($tensor.realize()))) as Box<dyn Fn()>,
            )
        };
    }
    let ops: Vec<Op> = vec![
        op!("add [1024, 1024]", x.add(&y)),
        op!("bias add [1024, 1024] + [1024]", x.add(&bias)),
        op!("exp [1024, 1024]", x.exp()),
        op!("tanh [1024, 1024]", x.tanh()),
        op!("sigmoid [1024, 1024]", x.sigmoid()),
        op!("gelu [1024, 1024]", x.gelu()),
        op!("exp of a transposed [1024, 1024]", x.t().exp()),
        op!("sum [1024, 1024]", x.sum_all()),
        op!("row sums [1024, 1024]", x.sum::<Axis<1>>()),
        op!("column sums [1024, 1024]", x.sum::<Axis<0>>()),
        op!("row maxima [1024, 1024]", x.max::<Axis<1>>()),
        op!("batch mean [4096, 256]", tall.mean::<Axis<0>>()),
        op!("softmax [1024, 1024]", x.softmax::<Axis<1>>()),
        op!("log_softmax [1024, 1024]", x.log_softmax::<Axis<1>>()),
        op!("softmax [64, 256]", small.softmax::<Axis<1>>()),
        op!("log_softmax [64, 256]", small.log_softmax::<Axis<1>>()),
        op!(
            "cross entropy [1024, 100]",
            cross_entropy(&logits, &labels).expect("labels fit")
        ),
        op!("layer norm [1024, 1024]", norm.forward(x.clone())),
        (
            "softmax forward and backward [1024, 1024]",
            Box::new(|| input_gradient(&x, &y, |x| x.softmax::<Axis<1>>())),
        ),
        (
            "layer norm forward and backward [1024, 1024]",
            Box::new(|| input_gradient(&x, &y, |x| norm.forward(x))),
        ),
        op!(
            "embedding lookup [4096] of [10000, 256]",
            table.select_rows(&ids).expect("ids in range")
        ),
        (
            "embedding forward and backward [4096] of [10000, 256]",
            Box::new(|| {
                let table = table.clone().requires_grad();
                let rows = table.select_rows(&ids).expect("ids in range");
                rows.mul(&rows_weight).sum_all().backward();
                drop(black_box(table.grad()));
            }),
        ),
        op!(
            "cat [1024, 512] and [1024, 512] along columns",
            left.cat_in(&right, Axis::<1>, Const::<1024>)
        ),
    ];
    // `cargo bench` passes `--bench`; any other argument names the ops to run.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    for (name, op) in &ops {
        if only.is_empty() || only.iter().any(|o| o == name) {
            println!("{name}: {:.3e} s", time(op));
        }
    }
}
