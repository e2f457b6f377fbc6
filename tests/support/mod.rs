//! Seeded random cases for the property tests: each case is generated from its own seed, so a
//! failure prints the one seed that rebuilds it.
//!
//! `TEENYGRAD_CASES=N` runs `N` cases instead of a test's default; `TEENYGRAD_SEED=S` starts
//! from another base seed (the default is fixed, so `cargo test` checks the same cases every
//! run); `TEENYGRAD_CASE=S` runs only the case of seed `S`, as printed by a failure.
//!
//! There is no shrinking: a failing case is reported as generated, with its seed.

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use rand::SeedableRng;
use rand::rngs::StdRng;

/// The base seed when `TEENYGRAD_SEED` is unset.
const DEFAULT_SEED: u64 = 0x7465_656e_7967_7264;

fn env_u64(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} is not a non-negative integer")),
    )
}

/// The seed of case `i` from the base seed: SplitMix64, so neighbouring cases are unrelated.
fn case_seed(base: u64, i: u64) -> u64 {
    let mut z = base.wrapping_add(i.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `check` on `default_cases` cases drawn by `generate` (or as the environment says, see the
/// module docs). A failing case's panic is re-raised after printing the case and its seed.
pub fn run_cases<C: Debug>(
    name: &str,
    default_cases: u64,
    generate: impl Fn(&mut StdRng) -> C,
    mut check: impl FnMut(&C),
) {
    let seeds: Vec<u64> = match env_u64("TEENYGRAD_CASE") {
        Some(seed) => vec![seed],
        None => {
            let base = env_u64("TEENYGRAD_SEED").unwrap_or(DEFAULT_SEED);
            let cases = env_u64("TEENYGRAD_CASES").unwrap_or(default_cases);
            (0..cases).map(|i| case_seed(base, i)).collect()
        }
    };
    for seed in seeds {
        let case = generate(&mut StdRng::seed_from_u64(seed));
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&case))) {
            eprintln!("{name}: case failed; rerun it alone with TEENYGRAD_CASE={seed}\n{case:#?}");
            resume_unwind(panic);
        }
    }
}
