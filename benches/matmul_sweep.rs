//! Random products against raw `matrixmultiply::sgemm`: sizes log-uniform from 1 to 1,500 on
//! each side, each operand stored by rows or by columns (a transposed view) at random, one
//! thread unless `TEENYGRAD_THREADS` says otherwise. Each product is checked to give sgemm's
//! bits, then both are timed in alternation (the fastest of four rounds each, every round long
//! enough to time); it prints the ratio of the times for products of at least 30,000
//! multiply-adds (below that the lazy buffer's fixed cost, about a microsecond, dominates) and
//! the slowest cases.
//!
//! `cargo bench --bench matmul_sweep -- [cases] [seed]` (300 and 1 by default; about a minute).

use std::hint::black_box;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod raw_sgemm;
mod sweep;

/// One case: `(ours / sgemm, multiply-adds, description)`.
type Case = (f64, usize, String);

fn case(rng: &mut StdRng) -> Case {
    let mut side = || (1500f64.ln() * rng.random::<f64>()).exp().round() as usize;
    let (m, k, n) = (side(), side(), side());
    let (a_rows, b_rows) = (rng.random::<bool>(), rng.random::<bool>());
    let (a, av, a_strides) = raw_sgemm::operand(rng, m, k, a_rows);
    let (b, bv, b_strides) = raw_sgemm::operand(rng, k, n, b_rows);
    let order = |by_rows| if by_rows { "rows" } else { "cols" };
    let name = format!(
        "[{m}, {k}] x [{k}, {n}], A by {}, B by {}",
        order(a_rows),
        order(b_rows)
    );
    let want = raw_sgemm::sgemm_strided((m, k, n), &av, a_strides, &bv, b_strides);
    let got = a.matmul(&b).to_vec();
    let same = got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "{name}: not sgemm's bits");
    let macs = m * k * n;
    let iters = (30_000_000 / macs.max(1)).clamp(2, 20_000);
    let ours = sweep::fastest(iters, &mut || {
        black_box(a.matmul(black_box(&b)).realize());
    });
    let raw = sweep::fastest(iters, &mut || {
        black_box(raw_sgemm::sgemm_strided(
            (m, k, n),
            &av,
            a_strides,
            &bv,
            b_strides,
        ));
    });
    let name = format!("{name}: {:.1} µs against {:.1}", ours * 1e6, raw * 1e6);
    (ours / raw, macs, name)
}

fn main() {
    let (cases, seed) = sweep::cases_and_seed(300);
    let mut rng = StdRng::seed_from_u64(seed);
    let results: Vec<Case> = (0..cases).map(|_| case(&mut rng)).collect();
    let large: Vec<(f64, String)> = (results.into_iter())
        .filter(|&(_, macs, _)| macs >= 30_000)
        .map(|(ratio, _, name)| (ratio, name))
        .collect();
    let what = format!(
        "{cases} random products (seed {seed}), all sgemm's bits; {} of at least 30,000 \
         multiply-adds, time against sgemm's",
        large.len()
    );
    sweep::report(&what, "against sgemm", large, [1.0, 1.05]);
}
