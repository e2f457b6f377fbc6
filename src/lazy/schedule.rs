//! The scheduler: turns the pending graph behind some buffers into kernels and runs them.
//!
//! Grouping rule: an elementwise node joins the kernel of its consumers when all of them are in
//! one kernel (elementwise, reduce or copy; never a matmul, which needs a buffer), the view it is
//! read through composes with its own inputs' views, and the kernel has fewer than
//! [`MAX_FUSED_OPS`] operations. Every other node is a kernel of its own, run once and cached.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use super::kernel::{FusedKernel, Instr, Leaf};
use super::node::{Node, Op};
use super::view::View;
use super::{LazyBuffer, matmul, stats};

/// A bound on one kernel's program: keeps per-block scratch small and deep chains iterative.
pub(crate) const MAX_FUSED_OPS: usize = 64;

/// Realizes the nodes behind `roots` (and only what they need).
pub(crate) fn realize(roots: &[&LazyBuffer]) {
    if roots.iter().all(|r| r.node.buffer().is_some()) {
        return;
    }
    let started = Instant::now();
    let mut forced: HashSet<u64> = HashSet::new();
    loop {
        let graph = Graph::collect(roots, &forced);
        match graph.run() {
            Ok(()) => break,
            // A view that does not compose: that node gets a buffer of its own, and we retry.
            Err(node_id) => {
                forced.insert(node_id);
            }
        }
    }
    stats::update(|s| s.realize_time += started.elapsed());
}

/// The pending part of the graph, in topological order (inputs first).
struct Graph {
    nodes: Vec<Arc<Node>>,
    ops: Vec<Op>,
    index: HashMap<u64, usize>,
    /// Index of the kernel root each node belongs to.
    kernel_of: Vec<usize>,
}

impl Graph {
    fn collect(roots: &[&LazyBuffer], forced: &HashSet<u64>) -> Graph {
        let mut graph = Graph {
            nodes: Vec::new(),
            ops: Vec::new(),
            index: HashMap::new(),
            kernel_of: Vec::new(),
        };
        // Iterative post-order DFS: deep graphs must not overflow the stack.
        let mut visited: HashSet<u64> = HashSet::new();
        let mut stack: Vec<(Arc<Node>, Option<Op>)> = Vec::new();
        for root in roots {
            if visited.insert(root.node.id)
                && let Some(op) = root.node.op()
            {
                stack.push((root.node.clone(), Some(op)));
            }
            while let Some((node, op)) = stack.last_mut() {
                let pending_child = op.as_ref().and_then(|op| {
                    op.inputs()
                        .into_iter()
                        .find(|i| !visited.contains(&i.node.id))
                        .map(|i| i.node.clone())
                });
                match pending_child {
                    Some(child) => {
                        visited.insert(child.id);
                        if let Some(child_op) = child.op() {
                            stack.push((child, Some(child_op)));
                        }
                    }
                    None => {
                        let op = op.take().expect("visited once");
                        graph.index.insert(node.id, graph.nodes.len());
                        graph.nodes.push(node.clone());
                        graph.ops.push(op);
                        stack.pop();
                    }
                }
            }
        }
        graph.group(roots, forced);
        graph
    }

    /// Assigns each node to a kernel, consumers before producers.
    fn group(&mut self, roots: &[&LazyBuffer], forced: &HashSet<u64>) {
        let n = self.nodes.len();
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, op) in self.ops.iter().enumerate() {
            for input in op.inputs() {
                if let Some(&j) = self.index.get(&input.node.id) {
                    consumers[j].push(i);
                }
            }
        }
        let requested: HashSet<u64> = roots.iter().map(|r| r.node.id).collect();
        let mut kernel_size = vec![0usize; n];
        self.kernel_of = (0..n).collect();
        for i in (0..n).rev() {
            let id = self.nodes[i].id;
            let mut target = None;
            if self.ops[i].is_elementwise() && !requested.contains(&id) && !forced.contains(&id) {
                let kernels: HashSet<usize> = consumers[i].iter().map(|&c| self.kernel_of[c]).collect();
                let feeds_fusable = consumers[i]
                    .iter()
                    .all(|&c| !matches!(self.ops[c], Op::MatMul(..)));
                if kernels.len() == 1 && feeds_fusable {
                    let k = *kernels.iter().next().expect("one kernel");
                    if kernel_size[k] < MAX_FUSED_OPS {
                        target = Some(k);
                    }
                }
            }
            let k = target.unwrap_or(i);
            self.kernel_of[i] = k;
            kernel_size[k] += 1;
        }
    }

    /// Runs every kernel root in topological order. `Err(id)` names a node that must be a root.
    fn run(&self) -> Result<(), u64> {
        for i in 0..self.nodes.len() {
            if self.kernel_of[i] != i || self.nodes[i].buffer().is_some() {
                continue;
            }
            let started = Instant::now();
            let (output, description, ops) = match &self.ops[i] {
                Op::MatMul(a, b) => {
                    let (ab, av) = operand(a);
                    let (bb, bv) = operand(b);
                    let out = matmul::run(&ab, &av, &bb, &bv);
                    (out, format!("matmul {:?} x {:?}", a.shape(), b.shape()), 1)
                }
                op => {
                    let kernel = self.build(i, op)?;
                    let ops = kernel.program.len() + usize::from(kernel.reduce.is_some());
                    let description = if stats::tracing() { kernel.describe() } else { String::new() };
                    (kernel.run(), description, ops)
                }
            };
            let elapsed = started.elapsed();
            if stats::tracing() {
                eprintln!("teenygrad kernel: {description} -> {:?} in {elapsed:?}", self.nodes[i].shape);
            }
            stats::update(|s| {
                s.kernels += 1;
                s.ops_fused += ops as u64;
                s.bytes_allocated += (output.len() * size_of::<f32>()) as u64;
            });
            self.nodes[i].set_realized(Arc::new(output));
        }
        Ok(())
    }

    /// Builds the fused kernel rooted at node `root`.
    fn build(&self, root: usize, op: &Op) -> Result<FusedKernel, u64> {
        let mut builder = Builder {
            graph: self,
            kernel: root,
            leaves: Vec::new(),
            program: Vec::new(),
            memo: HashMap::new(),
        };
        let shape = self.nodes[root].shape.clone();
        match op {
            Op::Reduce(reduce_op, input, axes) => {
                builder.value_of(input, input.view.clone())?;
                Ok(builder.finish(input.shape().to_vec(), Some((*reduce_op, axes.clone()))))
            }
            Op::Contiguous(input) => {
                builder.value_of(input, input.view.clone())?;
                Ok(builder.finish(shape, None))
            }
            _ => {
                builder.fused(root, &View::contiguous(&shape))?;
                Ok(builder.finish(shape, None))
            }
        }
    }
}

/// A matmul operand's buffer and view; a padded view is first copied out.
fn operand(input: &LazyBuffer) -> (Arc<Vec<f32>>, View) {
    let buf = input.node.buffer().expect("matmul inputs are realized before it");
    if input.view.mask().is_none() {
        return (buf, input.view.clone());
    }
    let mut copy = vec![0.0; input.numel()];
    super::kernel::gather(&buf, &input.view, 0, &mut copy);
    stats::update(|s| s.bytes_allocated += (copy.len() * size_of::<f32>()) as u64);
    (Arc::new(copy), View::contiguous(input.shape()))
}

struct Builder<'g> {
    graph: &'g Graph,
    kernel: usize,
    leaves: Vec<Leaf>,
    program: Vec<Instr>,
    memo: HashMap<(u64, View), usize>,
}

impl Builder<'_> {
    /// The kernel value of `input` read through `access` (a view over the kernel's shape onto the
    /// row-major layout of `input`'s node).
    fn value_of(&mut self, input: &LazyBuffer, access: View) -> Result<usize, u64> {
        let node = &input.node;
        if let Some(&v) = self.memo.get(&(node.id, access.clone())) {
            return Ok(v);
        }
        let fused_here = self
            .graph
            .index
            .get(&node.id)
            .is_some_and(|&j| self.graph.kernel_of[j] == self.kernel && node.buffer().is_none());
        let value = if fused_here {
            let j = self.graph.index[&node.id];
            self.fused(j, &access)?
        } else {
            let buf = node.buffer().expect("inputs of other kernels are realized first");
            self.leaves.push(Leaf { buf, view: access.clone() });
            // Leaves are numbered before instructions; fix up indices in `finish`.
            usize::MAX - (self.leaves.len() - 1)
        };
        self.memo.insert((node.id, access), value);
        Ok(value)
    }

    /// Emits the instruction of elementwise node `j`, evaluated through `access`.
    fn fused(&mut self, j: usize, access: &View) -> Result<usize, u64> {
        let op = &self.graph.ops[j];
        let mut operands = Vec::with_capacity(3);
        for input in op.inputs() {
            let composed = View::compose(access, &input.view).ok_or(self.graph.nodes[j].id)?;
            operands.push(self.value_of(input, composed)?);
        }
        let instr = match (op, operands.as_slice()) {
            (Op::Unary(u, _), &[a]) => Instr::Unary(*u, a),
            (Op::Binary(b, _, _), &[x, y]) => Instr::Binary(*b, x, y),
            (Op::Where(..), &[c, x, y]) => Instr::Where(c, x, y),
            _ => unreachable!("only elementwise nodes are fused"),
        };
        self.program.push(instr);
        Ok(self.program.len() - 1)
    }

    /// Renumbers values: leaves `0..L`, instruction `i` is `L + i`.
    fn finish(self, shape: Vec<usize>, reduce: Option<(super::ReduceOp, Vec<usize>)>) -> FusedKernel {
        let leaves = self.leaves.len();
        let fix = |v: usize| if v > usize::MAX / 2 { usize::MAX - v } else { leaves + v };
        let mut program = self.program;
        for instr in &mut program {
            *instr = match *instr {
                Instr::Unary(op, a) => Instr::Unary(op, fix(a)),
                Instr::Binary(op, a, b) => Instr::Binary(op, fix(a), fix(b)),
                Instr::Where(c, a, b) => Instr::Where(fix(c), fix(a), fix(b)),
            };
        }
        FusedKernel {
            shape,
            leaves: self.leaves,
            program,
            reduce,
        }
    }
}
