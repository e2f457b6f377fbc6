//! What the random sweeps share: their arguments, their timing, and the summary of their ratios.

use std::time::Instant;

/// `(cases, seed)` from the command line (numbers only: `cargo bench` passes `--bench`), each
/// defaulting to `default_cases` and 1.
pub fn cases_and_seed(default_cases: usize) -> (usize, u64) {
    let numbers: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let cases = numbers.first().map_or(default_cases, |&c| c as usize);
    (cases, numbers.get(1).copied().unwrap_or(1))
}

/// The fastest of four rounds of `iters` calls of `f`, in seconds per call.
pub fn fastest(iters: usize, f: &mut dyn FnMut()) -> f64 {
    (0..4)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .fold(f64::MAX, f64::min)
}

/// Prints `what` and the distribution of `results` (each a time against its limit, and a
/// description): median, 90th percentile, how many exceed each of `limits`, and the ten slowest
/// `against` the limit.
pub fn report(what: &str, against: &str, mut results: Vec<(f64, String)>, limits: [f64; 2]) {
    results.sort_by(|x, y| x.0.total_cmp(&y.0));
    let Some(median) = results.get(results.len() / 2) else {
        println!("{what}: no cases");
        return;
    };
    let p90 = &results[results.len() * 9 / 10];
    let over = |limit: f64| results.iter().filter(|r| r.0 > limit).count();
    println!(
        "{what}: median {:.2}, 90th percentile {:.2}, over {} in {}, over {} in {}",
        median.0,
        p90.0,
        limits[0],
        over(limits[0]),
        limits[1],
        over(limits[1])
    );
    println!("slowest {against}:");
    for (ratio, name) in results.iter().rev().take(10) {
        println!("  {ratio:.2}  {name}");
    }
}
