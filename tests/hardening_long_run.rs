//! Long training runs of the example's model (`Mlp<64, 128, 10>`, batch 32, SGD with momentum
//! 0.9, lr 0.1, the seeded toy digits): the number of live graph nodes is the same after every
//! step, and the process's resident memory stops growing once warmed up.
//!
//! `cargo test` runs 300 steps and checks the node count. The 10,000-step run (40 epochs of 8,000
//! images) also checks memory, and is ignored by default:
//!
//! ```text
//! cargo test --release --test hardening_long_run -- --ignored --nocapture
//! ```
//!
//! It prints the resident set size (`VmRSS` of `/proc/self/status`) every 1,000 steps and the
//! growth after warm-up (step 1,000), which must stay below 1 MiB. `HARDENING_STEPS=N` runs `N`
//! steps instead (100,000 take about 11 s in release and grow the RSS by well under 100 KiB).
//!
//! `nodes_alive()` counts the whole process, so both tests hold one lock and never overlap.

use std::sync::Mutex;
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::data::{Batcher, Dataset, Remainder, toy_digits_split};
use teenygrad::lazy::nodes_alive;
use teenygrad::nn::{Init, Mlp, Module, Params};
use teenygrad::optim::{Optimizer, Sgd};
use teenygrad::prelude::*;

static SERIAL: Mutex<()> = Mutex::new(());

fn batch(data: &Dataset, indices: &[usize]) -> (Tensor<(usize, Const<64>)>, Labels<usize>) {
    let (x, y) = data.gather(indices);
    (
        Tensor::from_vec(x, (indices.len(), Const)).unwrap(),
        Labels::from_vec(y),
    )
}

/// Resident set size of this process in KiB (Linux), or `None` where `/proc` is missing.
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Trains for `steps` steps as `examples/mlp` does; calls `after_step(step, loss)` after each
/// step (once the optimizer has updated the parameters and the gradients are cleared).
fn train(steps: usize, mut after_step: impl FnMut(usize, f32)) {
    let data = toy_digits_split(0, 8000, 0);
    let mut rng = StdRng::seed_from_u64(0);
    let mut model = Mlp::<64, 128, 10>::init(&mut rng);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut step = 0;
    while step < steps {
        for indices in Batcher::new(data.train.len(), 32, Remainder::Keep, &mut rng) {
            if step == steps {
                break;
            }
            let (x, labels) = batch(&data.train, &indices);
            let loss = cross_entropy(&model.forward(x), &labels).unwrap();
            loss.backward();
            let value = loss.item();
            drop(loss);
            opt.step(&mut model);
            model.zero_grad();
            after_step(step, value);
            step += 1;
        }
    }
}

/// Live nodes after each step: the same number from the first step on.
fn check_nodes_constant(steps: usize) -> (Vec<usize>, Vec<f32>) {
    let before = nodes_alive();
    let mut counts = Vec::with_capacity(steps);
    let mut losses = Vec::with_capacity(steps);
    train(steps, |_, loss| {
        counts.push(nodes_alive());
        losses.push(loss);
    });
    let first = counts[0];
    if let Some((step, &n)) = counts.iter().enumerate().find(|&(_, &n)| n != first) {
        panic!("live nodes changed from {first} (step 0) to {n} at step {step}");
    }
    // The parameters (4 leaves) and nothing else: gradients are cleared, the batch is gone.
    assert!(
        first <= before + 4,
        "{first} live nodes during training ({before} before)"
    );
    assert_eq!(nodes_alive(), before, "dropping the model frees its nodes");
    (counts, losses)
}

#[test]
fn three_hundred_steps_keep_live_nodes_constant() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (counts, losses) = check_nodes_constant(300);
    let early: f32 = losses[..20].iter().sum::<f32>() / 20.0;
    let late: f32 = losses[280..].iter().sum::<f32>() / 20.0;
    assert!(late < 0.5 * early, "the model trains: loss {early} -> {late}");
    println!(
        "300 steps: {} live nodes throughout; loss {early:.3} -> {late:.3}",
        counts[0]
    );
}

#[test]
#[ignore = "10,000 training steps (a second or two in release); run with --ignored"]
fn ten_thousand_steps_keep_nodes_and_memory_flat() {
    let steps: usize = std::env::var("HARDENING_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    const WARM_UP: usize = 1_000;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let before = nodes_alive();
    // The bookkeeping is allocated and written before the first reading, so that the pages it
    // touches later do not count as growth.
    let mut counts = vec![usize::MAX; steps];
    let mut losses = vec![f32::NAN; steps];
    let mut rss: Vec<(usize, u64)> = Vec::with_capacity(steps / 500 + 2);
    train(steps, |step, loss| {
        counts[step] = nodes_alive();
        losses[step] = loss;
        if ((step + 1) % 1000 == 0 || step + 1 == WARM_UP / 2)
            && let Some(kib) = rss_kib()
        {
            rss.push((step + 1, kib));
        }
    });
    let elapsed = started.elapsed();
    let first = counts[0];
    let changed = counts.iter().enumerate().find(|&(_, &n)| n != first);
    println!(
        "{steps} steps in {elapsed:.1?}: {first} live nodes after step 1 ({before} before), \
         {} after step {steps}; loss {:.4} (first 100 mean) -> {:.4} (last 100 mean)",
        counts[steps - 1],
        losses[..100].iter().sum::<f32>() / 100.0,
        losses[steps - 100..].iter().sum::<f32>() / 100.0,
    );
    for (step, kib) in &rss {
        println!("  RSS after step {step:>5}: {kib} KiB");
    }
    assert!(changed.is_none(), "live nodes changed: {changed:?} (step, count)");
    assert_eq!(nodes_alive(), before);
    let Some(&(_, warm)) = rss.iter().find(|(step, _)| *step == WARM_UP) else {
        println!("no /proc/self/status: memory not checked");
        return;
    };
    let peak_after = rss
        .iter()
        .filter(|(s, _)| *s >= WARM_UP)
        .map(|&(_, k)| k)
        .max()
        .unwrap();
    let last = rss.last().unwrap().1;
    println!(
        "RSS growth after warm-up (step {WARM_UP}): {} KiB at the end, {} KiB at most",
        last as i64 - warm as i64,
        peak_after - warm
    );
    assert!(
        peak_after - warm < 1024,
        "resident memory grew by {} KiB after warm-up",
        peak_after - warm
    );
}
