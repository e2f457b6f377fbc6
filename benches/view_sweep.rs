//! Reductions and elementwise ops over random views against the same ops on the same values
//! stored in order: rank 2 to 4, from 1K to 2M values, the axes stored in a random order and
//! read permuted; a sum or maximum over one axis, `exp`, or `x - max(x)` over one axis (a
//! softmax's first step). The limit for each is the same op on a contiguous copy (copied before
//! timing), so the ratio is what the layout costs. One thread unless `TEENYGRAD_THREADS` says
//! otherwise; both timed in alternation, the fastest of four rounds each. Results of the exact
//! ops (all but the sum) are checked to have the same bits either way.
//!
//! `cargo bench --bench view_sweep -- [cases] [seed]` (200 and 1 by default; about a minute).

use std::hint::black_box;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use teenygrad::lazy::{LazyBuffer, UnaryOp};

mod sweep;

/// One case: `(view / contiguous, description)`.
type Case = (f64, String);

/// The fastest of four rounds of `iters` realizations of `f`'s result, in seconds each.
fn fastest(iters: usize, f: &dyn Fn() -> LazyBuffer) -> f64 {
    sweep::fastest(iters, &mut || {
        black_box(f().realize());
    })
}

fn case(rng: &mut StdRng) -> Case {
    let rank = rng.random_range(2..=4);
    let total = rng.random_range(10.0f64..21.0).exp2();
    // Sizes whose product is about `total`, each a random power of what is left.
    let mut left = total;
    let dims: Vec<usize> = (0..rank)
        .map(|d| {
            let share = if d + 1 == rank {
                left
            } else {
                left.powf(rng.random_range(0.1..0.9))
            };
            let size = share.round().max(1.0);
            left = (left / size).max(1.0);
            size as usize
        })
        .collect();
    let n: usize = dims.iter().product();
    // Stored with its axes in the order `stored_axes`, read back as `dims`.
    let mut stored_axes: Vec<usize> = (0..rank).collect();
    stored_axes.shuffle(rng);
    let stored: Vec<usize> = stored_axes.iter().map(|&a| dims[a]).collect();
    let mut back = vec![0; rank];
    for (i, &a) in stored_axes.iter().enumerate() {
        back[a] = i;
    }
    let x = LazyBuffer::rand_uniform(&stored, -1.0, 1.0, rng).permute(&back);
    let ordered = LazyBuffer::from_vec(x.to_vec(), &dims).expect("the values of `dims`");
    let axis = rng.random_range(0..rank);
    let op = rng.random_range(0..4);
    let name = match op {
        0 => format!("sum over axis {axis}"),
        1 => format!("max over axis {axis}"),
        2 => "exp".to_string(),
        _ => format!("x - max(x) over axis {axis}"),
    };
    let apply = |x: &LazyBuffer| match op {
        0 => x.sum(&[axis]),
        1 => x.max(&[axis]),
        2 => x.unary(UnaryOp::Exp),
        _ => x.sub(&x.max(&[axis]).expand(&dims)),
    };
    let name = format!("{name} of {dims:?} stored as {stored:?}");
    if op != 0 {
        let bits = |y: LazyBuffer| y.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(apply(&x)) == bits(apply(&ordered)),
            "{name}: not the same bits"
        );
    }
    let iters = (10_000_000 / n).clamp(2, 10_000);
    let (view, limit) = (fastest(iters, &|| apply(&x)), fastest(iters, &|| apply(&ordered)));
    let per_value = view * 1e9 / n as f64;
    let name = format!(
        "{per_value:.2} ns per value  {name}: {:.1} µs against {:.1}",
        view * 1e6,
        limit * 1e6
    );
    (view / limit, name)
}

fn main() {
    let (cases, seed) = sweep::cases_and_seed(200);
    let mut rng = StdRng::seed_from_u64(seed);
    let results: Vec<Case> = (0..cases).map(|_| case(&mut rng)).collect();
    let what =
        format!("{cases} ops over random views (seed {seed}), against the same ops on values in order");
    sweep::report(&what, "against values in order", results, [2.0, 4.0]);
}
