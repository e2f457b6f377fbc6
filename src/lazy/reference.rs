//! The reference evaluator: the same graph, run with plain loops in f64, one node at a time, no
//! fusion and no caching into the graph. Tests compare the fast path with it.
//!
//! Call it before realizing: a realized node has dropped its inputs and reads as its buffer.

use std::collections::HashMap;

use super::LazyBuffer;
use super::node::{Indexing, Node, Op};
use super::ops::{ReduceOp, binary_f64, reduce_step_f64, unary_f64};
use super::view::View;
use crate::shape::runtime::numel;

/// The values of `buffer`, row-major, computed in f64 from the graph's leaves.
///
/// ```
/// use teenygrad::lazy::{LazyBuffer, UnaryOp, reference};
/// let x = LazyBuffer::from_vec(vec![0.0, 1.0], &[2]).unwrap();
/// let y = x.unary(UnaryOp::Exp);
/// assert_eq!(reference::evaluate(&y), vec![1.0, 1f64.exp()]);
/// ```
pub fn evaluate(buffer: &LazyBuffer) -> Vec<f64> {
    let mut memo: HashMap<u64, Vec<f64>> = HashMap::new();
    // Iterative post-order, so deep graphs do not overflow the stack.
    let mut stack: Vec<(std::sync::Arc<Node>, bool)> = vec![(buffer.node.clone(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if memo.contains_key(&node.id) {
            continue;
        }
        let op = node.op();
        match (&op, expanded) {
            (Some(op), false) => {
                stack.push((node.clone(), true));
                for input in op.inputs() {
                    stack.push((input.node.clone(), false));
                }
            }
            _ => {
                let values = match op {
                    None => node
                        .buffer()
                        .expect("realized")
                        .iter()
                        .map(|&x| x as f64)
                        .collect(),
                    Some(op) => eval_op(&op, &node.shape, &memo),
                };
                memo.insert(node.id, values);
            }
        }
    }
    read(&memo[&buffer.node.id], &buffer.view)
}

/// `input`'s values through its view, row-major.
fn read(values: &[f64], view: &View) -> Vec<f64> {
    indices(view.shape())
        .map(|index| view.position(&index).map_or(0.0, |p| values[p as usize]))
        .collect()
}

/// All multi-indices of `shape` in row-major order.
fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    (0..numel(shape)).map(move |mut linear| {
        let mut index = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            index[d] = linear % shape[d];
            linear /= shape[d];
        }
        index
    })
}

fn eval_op(op: &Op, shape: &[usize], memo: &HashMap<u64, Vec<f64>>) -> Vec<f64> {
    let input = |b: &LazyBuffer| read(&memo[&b.node.id], &b.view);
    match op {
        Op::Unary(u, a) => input(a).into_iter().map(|x| unary_f64(*u, x)).collect(),
        Op::Binary(b, x, y) => input(x)
            .into_iter()
            .zip(input(y))
            .map(|(p, q)| binary_f64(*b, p, q))
            .collect(),
        Op::Where(c, x, y) => {
            let (c, x, y) = (input(c), input(x), input(y));
            (0..c.len())
                .map(|i| if c[i] != 0.0 { x[i] } else { y[i] })
                .collect()
        }
        Op::Contiguous(a) => input(a),
        Op::Index(kind, x, idx) => {
            let (values, width) = (input(x), x.shape()[1]);
            match kind {
                Indexing::PickColumns => (idx.iter().enumerate())
                    .map(|(row, &c)| values[row * width + c])
                    .collect(),
                Indexing::PickRows => (idx.iter())
                    .flat_map(|&r| &values[r * width..(r + 1) * width])
                    .copied()
                    .collect(),
                Indexing::AddRows => {
                    let mut out = vec![0.0; numel(shape)];
                    for (i, &r) in idx.iter().enumerate() {
                        for j in 0..width {
                            out[r * width + j] += values[i * width + j];
                        }
                    }
                    out
                }
            }
        }
        Op::Cat(a, b, axis) => {
            let (inner, a_shape, b_shape) = (numel(&shape[axis + 1..]), a.shape(), b.shape());
            let (x, y) = (input(a), input(b));
            let (na, nb) = (a_shape[*axis] * inner, b_shape[*axis] * inner);
            (0..numel(&shape[..*axis]))
                .flat_map(|o| x[o * na..(o + 1) * na].iter().chain(&y[o * nb..(o + 1) * nb]))
                .copied()
                .collect()
        }
        Op::Reduce(r, a, axes) => {
            let values = input(a);
            let identity = match r {
                ReduceOp::Sum => 0.0,
                ReduceOp::Max => f64::NEG_INFINITY,
                ReduceOp::Min => f64::INFINITY,
            };
            let mut out = vec![identity; numel(shape)];
            let out_strides = crate::shape::runtime::contiguous_strides(shape);
            for (index, x) in indices(a.shape()).zip(values) {
                let o: isize = (0..index.len())
                    .filter(|d| !axes.contains(d))
                    .map(|d| index[d] as isize * out_strides[d])
                    .sum();
                out[o as usize] = reduce_step_f64(*r, out[o as usize], x);
            }
            out
        }
        Op::MatMul(a, b) => {
            let (av, bv) = (input(a), input(b));
            let rank = shape.len();
            let (m, n, k) = (shape[rank - 2], shape[rank - 1], a.shape()[rank - 1]);
            let batches = numel(&shape[..rank - 2]);
            let mut out = vec![0.0; batches * m * n];
            for bt in 0..batches {
                for i in 0..m {
                    for j in 0..n {
                        // From +0 like the engine (`Sum` on floats starts at -0, so an empty
                        // product would read -0).
                        out[(bt * m + i) * n + j] = (0..k)
                            .map(|p| av[(bt * m + i) * k + p] * bv[(bt * k + p) * n + j])
                            .fold(0.0, |acc, x| acc + x);
                    }
                }
            }
            out
        }
    }
}
