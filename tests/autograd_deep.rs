//! A chain of 100,000 tracked operations realizes and backpropagates on a default-sized (2 MiB)
//! thread stack, and every graph node it made is freed afterwards.
//!
//! This file holds one test only: `nodes_alive()` counts the whole process's nodes, so a test
//! running in parallel would disturb the count.

use teenygrad::lazy::nodes_alive;
use teenygrad::prelude::*;

const OPS: usize = 100_000;

/// The stack Rust gives a spawned thread by default (`RUST_MIN_STACK` unset). Set explicitly, so
/// that neither the test harness nor the environment can hand the chain a bigger one.
const DEFAULT_STACK: usize = 2 * 1024 * 1024;

#[test]
fn a_100k_op_chain_realizes_backprops_and_frees_its_nodes() {
    let before = nodes_alive();
    let worker = std::thread::Builder::new()
        .name("deep-chain".into())
        .stack_size(DEFAULT_STACK)
        .spawn(|| {
            // A chain that is never realized nor backpropagated: dropping it (100,000 pending lazy
            // nodes and records still holding their backward rules) must not recurse.
            let unused = Tensor::from([1.0, 2.0]).requires_grad();
            let mut chain = unused.clone();
            for _ in 0..OPS {
                chain = chain.sin();
            }
            drop((chain, unused));

            let x = Tensor::from([0.5, -1.0, 2.0, 3.25]).requires_grad();
            // Each block of four ops is the identity, exactly in floating point (×2, +1, −1, ×½ on
            // values this small), so the value stays x and the gradient stays exactly 1.
            let mut y = x.clone();
            for i in 0..OPS {
                y = match i % 4 {
                    0 => &y * 2.0,
                    1 => &y + 1.0,
                    2 => &y - 1.0,
                    _ => &y * 0.5,
                };
            }
            let loss = (&y * &Tensor::from([1.0, 2.0, 3.0, 4.0])).sum_all();
            assert!(
                nodes_alive() > OPS,
                "the chain is recorded lazily, one node per op at least"
            );
            // the forward pass, fused into kernels, run without recursion
            assert_eq!(y.to_vec(), vec![0.5, -1.0, 2.0, 3.25]);
            assert_eq!(loss.item(), 0.5 - 2.0 + 6.0 + 13.0);
            // the backward pass walks 100,000 records without recursion
            loss.backward();
            assert_eq!(
                x.grad().expect("the leaf got a gradient").to_array(),
                [1.0, 2.0, 3.0, 4.0]
            );
            // dropping the chain (records and lazy nodes) must not recurse either
            drop((y, loss));
            x.grad().expect("still there").to_array()
        })
        .expect("spawn a thread");
    let grad = worker
        .join()
        .expect("the chain ran without overflowing a 2 MiB stack");
    assert_eq!(grad, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(nodes_alive(), before, "every node the chain made was freed");
}
