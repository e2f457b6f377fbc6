//! The scheduler: turns the pending graph behind some buffers into kernels and runs them.
//!
//! Grouping rule: an elementwise node joins the kernel of its consumers when all of them are in
//! one kernel (elementwise, reduce or copy; never a matmul, which needs a buffer), the view it is
//! read through composes with its own inputs' views, the kernel has fewer than [`MAX_FUSED_OPS`]
//! operations, and it is not read through a wide broadcast (see [`recomputes_broadcast`]). A large
//! one read by a few kernels is computed inside each of them instead of being stored (see
//! [`recompute_pays`]). Every other node is a kernel of its own, run once and cached.

use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::Instant;

use super::axes::AxisVec;
use super::epilogue::{self, Epilogue};
use super::execute::{execute, operands};
use super::fast_hash::{FastMap, FastSet};
use super::kernel::{FusedKernel, Instr, Leaf, Program, fill_output, line_aligned_blocks};
use super::node::{Indexing, Node, Op};
use super::ops::{BinaryOp, UnaryOp};
use super::replay::{KernelPlan, Plans, Signature, Source, Step};
use super::storage::Storage;
use super::view::View;
use super::{LazyBuffer, matmul, stats};
use crate::shape::runtime::numel;

/// A bound on one kernel's program: keeps per-block scratch small and deep chains iterative.
pub(crate) const MAX_FUSED_OPS: usize = 64;

/// Realizes the nodes behind `roots` (and only what they need).
pub(crate) fn realize(roots: &[&LazyBuffer]) {
    if roots.iter().all(|r| r.node.is_realized()) {
        return;
    }
    let started = Instant::now();
    if let [root] = roots
        && realize_single(root)
    {
        stats::update(|s| s.realize_time += started.elapsed());
        return;
    }
    let mut forced: FastSet<u64> = FastSet::default();
    // Reused from the last realization on this thread (a nested one gets fresh maps).
    let mut scratch = SCRATCH.with(|s| s.take()).unwrap_or_default();
    loop {
        let mut graph = Graph::collect(roots, &mut scratch);
        let spare = std::mem::take(&mut scratch.signature);
        let mut signature = Signature::of(&graph.nodes, &graph.ops, &graph.index, roots, spare);
        let result = match scratch.plans.get(&signature) {
            Some(steps) if forced.is_empty() => {
                #[cfg(debug_assertions)]
                graph.check_replay(roots, &steps, &signature, &mut scratch.memo);
                graph.execute(&steps, &signature.externals, &mut scratch.live);
                stats::update(|s| s.schedules_reused += 1);
                Ok(())
            }
            _ => {
                graph.group(roots, &forced);
                graph
                    .plan(&mut scratch.memo, &signature)
                    .map(|(steps, replayable)| {
                        graph.execute(&steps, &signature.externals, &mut scratch.live);
                        // A plan made with forced roots would be replayed without the retries
                        // that found them; it is simply not kept.
                        if replayable && forced.is_empty() {
                            scratch.plans.insert(&mut signature, steps);
                        }
                    })
            }
        };
        graph.recycle(&mut scratch);
        signature.recycle();
        scratch.signature = signature;
        match result {
            Ok(()) => break,
            // A view that does not compose: that node gets a buffer of its own, and we retry.
            Err(node_id) => {
                forced.insert(node_id);
            }
        }
    }
    // A huge graph's maps are not worth holding on to; the plans of the graphs before it are.
    if scratch.visited.capacity() > 1 << 12 {
        scratch = Scratch {
            plans: scratch.plans,
            ..Scratch::default()
        };
    }
    SCRATCH.with(|s| s.set(Some(scratch)));
    stats::update(|s| s.realize_time += started.elapsed());
}

/// Maps and lists the scheduler fills on every realization. Kept per thread between
/// realizations, so a training step's many small graphs neither allocate them nor grow them again.
#[derive(Default)]
struct Scratch {
    visited: FastSet<u64>,
    index: FastMap<u64, usize>,
    nodes: Vec<Arc<Node>>,
    ops: Vec<Op>,
    /// Pending nodes whose inputs are being visited, with their ops (empty between uses).
    stack: Vec<(Arc<Node>, Op)>,
    signature: Signature,
    memo: FastMap<(u64, View), usize>,
    plans: Plans,
    live: Live,
}

/// Marks a node or op that no step needs after the graph's planning.
const UNNEEDED: usize = usize::MAX;

/// The bytes of output from which a run lets go of each node after its last reader (see
/// [`Graph::execute`]): below it, holding all to the end costs less memory than tracking costs
/// time. The 64→128→10 training step (74 KB of outputs) took 1.03 of its time tracking them.
const RELEASE_FROM: usize = 1 << 20;

/// A graph's nodes and ops while its steps run (see [`Graph::execute`]), each let go after the
/// last step that needs it. Kept in [`Scratch`], so its lists keep their room.
#[derive(Default)]
struct Live {
    nodes: Vec<Option<Arc<Node>>>,
    ops: Vec<Option<Op>>,
    /// (the step after which to let go, the position), by step: nodes', then ops'.
    releases: [Vec<(usize, usize)>; 2],
    /// How many of each list of `releases` are done.
    released: [usize; 2],
    /// The last step that needs each node, and each op.
    last: [Vec<usize>; 2],
}

impl Live {
    /// Takes `graph`'s nodes and ops for running `steps`, and lets go at once of those no step
    /// needs: ops other than a product's or a copy's (the fused kernels' plans are built), and
    /// nodes no step computes or reads (those fused into a kernel, whose root holds them).
    fn take(&mut self, graph: &mut Graph, steps: &[Step]) {
        self.nodes.extend(graph.nodes.drain(..).map(Some));
        self.ops.extend(graph.ops.drain(..).map(Some));
        self.releases.iter_mut().for_each(Vec::clear);
        self.released = [0, 0];
        let n = self.nodes.len();
        let [node_last, op_last] = &mut self.last;
        for last in [&mut *node_last, &mut *op_last] {
            last.clear();
            last.resize(n, UNNEEDED);
        }
        // Steps come in order, so the last one written is the last that needs it.
        for (s, step) in steps.iter().enumerate() {
            let mut read = |source: &Source| {
                if let Source::Node(j) = source {
                    node_last[*j] = s;
                }
            };
            match step {
                Step::MatMul(i) | Step::Copy(i) => (node_last[*i], op_last[*i]) = (s, s),
                Step::Fused(i, plan) => {
                    plan.leaves.iter().for_each(|(source, _)| read(source));
                    node_last[*i] = s;
                }
                Step::Product {
                    product,
                    kernel,
                    plan,
                    epilogue,
                } => {
                    plan.leaves.iter().for_each(|(source, _)| read(source));
                    epilogue.sources().for_each(read);
                    (node_last[*product], op_last[*product], node_last[*kernel]) = (s, s, s);
                }
            }
        }
        for (which, last) in self.last.iter().enumerate() {
            let releases = &mut self.releases[which];
            for (j, &s) in last.iter().enumerate() {
                match s {
                    UNNEEDED if which == 0 => self.nodes[j] = None,
                    UNNEEDED => self.ops[j] = None,
                    s => releases.push((s, j)),
                }
            }
            releases.sort_unstable();
        }
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.ops.clear();
    }
}

impl Held for Live {
    fn node(&self, i: usize) -> &Node {
        self.nodes[i]
            .as_deref()
            .expect("a step's nodes are held until it has run")
    }

    fn op(&self, i: usize) -> &Op {
        self.ops[i]
            .as_ref()
            .expect("a product's or copy's op is held until its step")
    }

    fn buffer(&self, j: usize) -> Option<Arc<Storage>> {
        self.nodes[j].as_ref()?.buffer()
    }

    /// Lets go of what no step after step `s` needs.
    fn done(&mut self, s: usize) {
        for which in 0..2 {
            while let Some(&(step, j)) = self.releases[which].get(self.released[which])
                && step <= s
            {
                if which == 0 {
                    self.nodes[j] = None;
                } else {
                    self.ops[j] = None;
                }
                self.released[which] += 1;
            }
        }
    }
}

/// Runs `steps` over the nodes and ops `held` gives, skipping kernels another thread has
/// realized meanwhile, and tells it after each step.
fn run_steps(held: &mut impl Held, steps: &[Step], externals: &[Arc<Node>]) {
    for (s, step) in steps.iter().enumerate() {
        match step {
            _ if held.node(step.output()).is_realized() => {}
            Step::MatMul(i) => run_product(held, *i, *i, None, externals),
            Step::Copy(i) => run_copy(held.node(*i), held.op(*i)),
            Step::Fused(i, plan) => run_kernel(held.node(*i), plan.bind(|j| held.buffer(j), externals)),
            Step::Product {
                product,
                kernel,
                plan,
                epilogue,
            } => {
                if held.node(*product).is_realized() {
                    run_kernel(held.node(*kernel), plan.bind(|j| held.buffer(j), externals));
                } else {
                    run_product(held, *product, *kernel, Some(epilogue), externals);
                }
            }
        }
        held.done(s);
    }
}

/// Runs the matmul at `p` into node `into`: itself, or the kernel whose `epilogue` it takes.
fn run_product(
    held: &impl Held,
    p: usize,
    into: usize,
    epilogue: Option<&Epilogue>,
    externals: &[Arc<Node>],
) {
    let Op::MatMul(a, b) = held.op(p) else {
        unreachable!("a product step on {:?}", held.op(p))
    };
    let epilogue = epilogue.map(|e| {
        let mut buffers = EpilogueBuffers::default();
        for (buffer, source) in buffers.iter_mut().zip(e.sources()) {
            *buffer = Some(source.buffer(|j| held.buffer(j), externals));
        }
        (e, buffers)
    });
    run_matmul(held.node(into), a, b, epilogue);
}

/// The nodes and ops of a graph whose steps run: the graph's own, all held to the run's end, or
/// a [`Live`] copy that lets go of each after the last step needing it.
trait Held {
    fn node(&self, i: usize) -> &Node;
    fn op(&self, i: usize) -> &Op;
    /// Node `j`'s buffer, if it holds one.
    fn buffer(&self, j: usize) -> Option<Arc<Storage>> {
        self.node(j).buffer()
    }
    /// Step `s` has run.
    fn done(&mut self, _s: usize) {}
}

impl Held for Graph {
    fn node(&self, i: usize) -> &Node {
        &self.nodes[i]
    }

    fn op(&self, i: usize) -> &Op {
        &self.ops[i]
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

/// The common case of one elementwise node or matmul whose inputs all hold buffers (an
/// eager-style step): one kernel, run without collecting a graph. False for any other node.
fn realize_single(root: &LazyBuffer) -> bool {
    let kernel = {
        let pending = root.node.pending();
        let Some(op) = &*pending else {
            return false;
        };
        let program = match op {
            Op::Unary(u, _) => Instr::Unary(*u, 0),
            Op::Binary(b, _, _) => Instr::Binary(*b, 0, 1),
            Op::Where(..) => Instr::Where(0, 1, 2),
            Op::MatMul(a, b) if a.is_realized() && b.is_realized() => {
                let (a, b) = (a.clone(), b.clone());
                drop(pending);
                run_matmul(&root.node, &a, &b, None);
                return true;
            }
            _ => return false,
        };
        let inputs = op.inputs();
        let mut bufs = Vec::with_capacity(3);
        for input in inputs.iter() {
            // Another node's lock: the graph is acyclic, so never the one held.
            let Some(buf) = input.node.buffer() else {
                return false;
            };
            bufs.push(buf);
        }
        // Every input read row-major from an offset: one pass straight over the buffers.
        let plain = |b: &&LazyBuffer| b.view.mask().is_none() && b.view.has_contiguous_strides();
        if inputs.iter().all(plain) {
            let n = root.node.shape.iter().product::<usize>();
            let offsets: Vec<usize> = inputs.iter().map(|b| b.view.offset() as usize).collect();
            drop(pending);
            let trace = stats::tracing().then(|| (format!("{program:?} (direct)"), Instant::now()));
            let fill = |part: &mut [MaybeUninit<f32>], offset: usize| {
                for (start, dst) in line_aligned_blocks(part) {
                    let (start, len) = (offset + start, dst.len());
                    let value = |v: usize| -> &[f32] {
                        let from = offsets[v] + start;
                        &bufs[v][from..from + len]
                    };
                    execute(&program, &operands(&program, value), dst);
                }
            };
            // SAFETY: `execute` writes every element of each block.
            let out = unsafe { fill_output(n, fill) };
            record(&root.node, out, 1, trace);
            return true;
        }
        // An elementwise input's view is already over the kernel's shape.
        let leaves = inputs
            .iter()
            .zip(bufs)
            .map(|(input, buf)| Leaf {
                buf,
                view: input.view.clone(),
            })
            .collect();
        FusedKernel {
            shape: root.node.shape.clone(),
            leaves,
            program: Program::new(inputs.len(), vec![program]),
            reduce: None,
        }
    };
    run_kernel(&root.node, kernel);
    true
}

/// Runs a fused kernel for `node`, records it, and stores the result in the node.
fn run_kernel(node: &Node, kernel: FusedKernel) {
    let ops = kernel.program.len() + usize::from(kernel.reduce.is_some());
    let trace = stats::tracing().then(|| (kernel.describe(), Instant::now()));
    let output = kernel.run();
    record(node, output, ops, trace);
}

/// The buffers an epilogue reads, in the order of [`Epilogue::sources`] (a fixed array: this
/// runs for every product, and a `Vec` cost allocations).
type EpilogueBuffers = [Option<Arc<Storage>>; epilogue::MAX_SOURCES];

/// Runs `a · b` (both realized) for `node`, then `epilogue` on it if given (with the buffers it
/// reads), records it, and stores the result.
fn run_matmul(node: &Node, a: &LazyBuffer, b: &LazyBuffer, epilogue: Option<(&Epilogue, EpilogueBuffers)>) {
    let trace = stats::tracing().then(|| {
        let what = format!("matmul {:?} x {:?}", a.shape(), b.shape());
        (what, Instant::now())
    });
    let (ab, av) = operand(a);
    let (bb, bv) = operand(b);
    let values = epilogue.as_ref().map(|(epilogue, buffers)| {
        let values = buffers
            .each_ref()
            .map(|b| b.as_deref().map_or(&[][..], |b| &b[..]));
        (*epilogue, values)
    });
    // C's rows and columns (of each batch; `matmul::run` takes the epilogue only with one).
    let (m, n) = match node.shape[..] {
        [.., m, n] => (m, n),
        _ => (1, node.shape.last().copied().unwrap_or(1)),
    };
    let sources = |epilogue: &Epilogue| epilogue.sources().count();
    let finish =
        (values.as_ref()).map(|(epilogue, values)| epilogue.finish(&values[..sources(epilogue)], (m, n)));
    // SAFETY: `finish` reads the epilogue's buffers, alive until this function returns, within
    // the lengths `Epilogue::finish` checked.
    let (mut out, path, finished) = unsafe { matmul::run(&ab, &av, &bb, &bv, finish) };
    let mut ops = 1;
    if let Some((epilogue, values)) = &values {
        if !finished {
            epilogue.apply(&values[..sources(epilogue)], &mut out, n);
        }
        ops += epilogue.ops();
    }
    let trace = trace.map(|(what, started)| {
        let then = (epilogue.as_ref()).map_or(String::new(), |(e, _)| format!(", then {}", e.describe()));
        (format!("{what} on {path}{then}"), started)
    });
    record(node, out, ops, trace);
}

/// Runs an [`Op::Index`] or [`Op::Cat`] (its inputs realized) for `node`.
fn run_copy(node: &Node, op: &Op) {
    match op {
        Op::Index(kind, x, idx) => run_index(node, *kind, x, idx),
        Op::Cat(a, b, axis) => run_cat(node, a, b, *axis),
        _ => unreachable!("a copy step on {op:?}"),
    }
}

/// Runs [`LazyBuffer::cat`] for `node`: for each index of the axes before `axis`, a block of `a`
/// then one of `b`, each read through its view as a kernel reads a leaf (a plain copy where it
/// is stored in order), into a pooled output split between threads when large.
fn run_cat(node: &Node, a: &LazyBuffer, b: &LazyBuffer, axis: usize) {
    let trace = stats::tracing().then(|| {
        (
            format!("cat of {:?} and {:?}", a.shape(), b.shape()),
            Instant::now(),
        )
    });
    let inner = numel(&node.shape[axis + 1..]);
    let parts = [a, b].map(|x| {
        let buf = x.node.buffer().expect("a cat's inputs are realized before it");
        (buf, x.shape()[axis] * inner, &x.view)
    });
    let block = parts[0].1 + parts[1].1;
    // SAFETY: each part of the output is written whole, one segment of `a` or `b` at a time.
    let out = unsafe {
        fill_output(numel(&node.shape), |part, start| {
            let mut at = 0;
            while at < part.len() {
                let (outer, within) = ((start + at) / block, (start + at) % block);
                let (which, offset) = if within < parts[0].1 {
                    (0, within)
                } else {
                    (1, within - parts[0].1)
                };
                let (buf, len, view) = &parts[which];
                let count = (len - offset).min(part.len() - at);
                let segment = &mut part[at..at + count];
                segment.fill(MaybeUninit::new(0.0));
                // SAFETY: just initialized.
                let segment = std::slice::from_raw_parts_mut(segment.as_mut_ptr().cast::<f32>(), count);
                super::gather::gather(buf, view, outer * len + offset, segment);
                at += count;
            }
        })
    };
    record(node, out, 1, trace);
}

/// Runs an [`Op::Index`] (its input realized, its indices checked) for `node`, records it, and
/// stores the result.
fn run_index(node: &Node, kind: Indexing, x: &LazyBuffer, idx: &[usize]) {
    let trace = stats::tracing().then(|| (format!("{kind:?} of {:?}", x.shape()), Instant::now()));
    let buf = x
        .node
        .buffer()
        .expect("an index op's input is realized before it");
    let read = |row: usize, column: usize| x.view.position(&[row, column]).map_or(0.0, |p| buf[p as usize]);
    let width = x.shape()[1];
    // Rows stored in one piece (not padded, unit stride) are read as slices.
    let in_place = width > 0 && x.view.mask().is_none() && (width == 1 || x.view.strides()[1] == 1);
    let row_slice = |row: usize| -> Option<&[f32]> {
        let start = x.view.position(&[row, 0]).filter(|_| in_place)? as usize;
        Some(&buf[start..start + width])
    };
    let out: Storage = match kind {
        // SAFETY: each part is written whole, a value at a time.
        Indexing::PickColumns => unsafe {
            fill_output(idx.len(), |part, start| {
                (part.iter_mut().enumerate()).for_each(|(k, v)| _ = v.write(read(start + k, idx[start + k])))
            })
        },
        // SAFETY: each part is written whole, a row's segment at a time.
        Indexing::PickRows => unsafe {
            fill_output(numel(&node.shape), |part, start| {
                let mut at = 0;
                while at < part.len() {
                    let (row, column) = (idx[(start + at) / width], (start + at) % width);
                    let count = (width - column).min(part.len() - at);
                    let sink = &mut part[at..at + count];
                    match row_slice(row) {
                        Some(values) => (sink.iter_mut().zip(&values[column..]))
                            .for_each(|(v, &value)| _ = v.write(value)),
                        None => (sink.iter_mut().enumerate())
                            .for_each(|(k, v)| _ = v.write(read(row, column + k))),
                    }
                    at += count;
                }
            })
        },
        Indexing::AddRows => {
            let mut out = zeroed_output(numel(&node.shape));
            for (i, &row) in idx.iter().enumerate() {
                let sums = &mut out[row * width..(row + 1) * width];
                match row_slice(i) {
                    Some(values) => sums.iter_mut().zip(values).for_each(|(s, v)| *s += v),
                    None => (sums.iter_mut().enumerate()).for_each(|(column, s)| *s += read(i, column)),
                }
            }
            out
        }
    };
    record(node, out, 1, trace);
}

/// `n` zeros in an output buffer from the pool: a fresh large allocation costs its page faults
/// on every call (an embedding lookup of 4 MB took 4 ms that way, 0.7 when the allocator
/// happened to keep the memory).
fn zeroed_output(n: usize) -> Storage {
    // SAFETY: each part is written whole.
    unsafe { fill_output(n, |part, _| part.fill(MaybeUninit::new(0.0))) }
}

/// Counts a kernel's run, traces it if asked, and stores its output in `node`.
fn record(node: &Node, output: Storage, ops: usize, trace: Option<(String, Instant)>) {
    if let Some((description, started)) = trace {
        let elapsed = started.elapsed();
        eprintln!(
            "teenygrad kernel: {description} -> {:?} in {elapsed:?}",
            node.shape
        );
    }
    stats::update(|s| {
        s.kernels += 1;
        s.ops_fused += ops as u64;
        s.bytes_allocated += (output.len() * size_of::<f32>()) as u64;
    });
    node.set_realized(Arc::new(output));
}

/// Who reads a node, as far as fusing it goes.
#[derive(Clone, Copy)]
enum Consumers {
    /// Nothing in the graph (a root).
    None,
    /// Only nodes of these kernels.
    Kernels(KernelSet),
    /// More kernels than a set holds, a matmul (which needs its operands in buffers), or a
    /// consumer that reads it through a wide broadcast.
    Unfusable,
}

/// Up to [`KernelSet::CAPACITY`] distinct kernels, by root index.
#[derive(Clone, Copy)]
struct KernelSet {
    ids: [usize; KernelSet::CAPACITY],
    len: usize,
}

impl KernelSet {
    /// A node recomputed in more kernels than this is not worth its repeated work.
    const CAPACITY: usize = 4;

    fn one(k: usize) -> KernelSet {
        let mut ids = [0; KernelSet::CAPACITY];
        ids[0] = k;
        KernelSet { ids, len: 1 }
    }

    fn ids(&self) -> &[usize] {
        &self.ids[..self.len]
    }

    /// The union of two sets, if it fits.
    fn union(mut self, other: &KernelSet) -> Option<KernelSet> {
        for &k in other.ids() {
            if !self.ids().contains(&k) {
                *self.ids.get_mut(self.len)? = k;
                self.len += 1;
            }
        }
        Some(self)
    }
}

/// `kernel_of` for an elementwise node computed inside every kernel that reads it, not stored.
const RECOMPUTED: usize = usize::MAX;

/// True if an elementwise node computing `op` over `values` values, read by several kernels,
/// costs less computed again in each than written out once and read back by each: when the
/// buffer would not stay in L2, so writing it and reading it back are passes through memory,
/// and `op` is cheaper per value than those passes (on the Ice Lake-SP machine measured, with
/// AVX-512, about 36 cycles per 16 values, one thread). Softmax's forward and backward over
/// [1024, 1024] wrote seven kernels' results, two of them the same `exp(x - max)`; with its
/// nodes recomputed it is four kernels, 0.59 of its time there (0.61–0.69 at [512, 1024] and
/// [2048, 1024]). The forward alone, exponentials once stored and read twice against computed
/// twice, is a tie (0.85–1.17 over 15 pairs), with one buffer fewer.
///
/// Without AVX-512 only ops that [`Op::is_costly`] does not name are recomputed. On the AMD
/// EPYC (Zen 3, AVX2) measured, whose 32 MiB L3 keeps such a buffer, storing the exponentials
/// took 0.78 of softmax's forward time over [1024, 1024] and 0.75 of its forward and backward,
/// one thread (median of 7 alternating pairs); LayerNorm's `x - mean` is still better recomputed
/// there (stored, its forward took 1.14 of the time). What decides is how fast the caches are
/// against the vector math, which differ by machine, not the instruction set as such; it is
/// keyed to the instruction set as what told the two measured machines apart.
fn recompute_pays(op: &Op, values: usize) -> bool {
    let cheap_enough = match op {
        Op::Unary(u, _) => !matches!(u, UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Erf | UnaryOp::Gelu),
        Op::Binary(b, _, _) => *b != BinaryOp::Pow,
        Op::Where(..) => true,
        _ => false,
    };
    let costly_pays = super::small_gemm::avx512();
    cheap_enough && (costly_pays || !op.is_costly()) && values >= RECOMPUTE_MIN_VALUES
}

/// The smallest node [`recompute_pays`] recomputes: 1 MiB of values, most of this CPU's 1.25 MiB
/// L2. Softmax forward and backward, one thread, recomputing against writing out: [64, 256]
/// 1.12 of its time, [128, 1024] 1.05, [256, 1024] 0.86–0.87.
const RECOMPUTE_MIN_VALUES: usize = 1 << 18;

/// True if fusing `input`'s node (computing `op`) into a consumer that reads it through
/// `input`'s view would compute each of its values many times over (the view broadcasts it at
/// least 4-fold) on enough elements (2^14 more, 2^12 for a transcendental or a division) that a
/// kernel of its own and a small buffer cost less: `log` of a row sum read across a [1024, 1024]
/// log_softmax ran a million times instead of a thousand, and across a [64, 256] one 16,384 times
/// (log_softmax 25 µs, 20 with the log's own kernel). Small broadcasts (a loss's per-row terms
/// over a batch of logits) still fuse: there a kernel's fixed cost is larger than the
/// recomputation.
fn recomputes_broadcast(input: &LazyBuffer, op: &Op) -> bool {
    let (reads, values) = (input.numel(), numel(&input.node.shape));
    let extra = if op.is_costly() { 1 << 12 } else { 1 << 14 };
    reads >= 4 * values && reads - values >= extra
}

/// The pending part of the graph, in topological order (inputs first).
struct Graph {
    nodes: Vec<Arc<Node>>,
    ops: Vec<Op>,
    index: FastMap<u64, usize>,
    /// Index of the kernel root each node belongs to. A matmul whose only reader is one
    /// elementwise kernel belongs to that kernel: it runs just before it, and with it (see
    /// [`Epilogue`]) when the kernel is a bias or relu.
    kernel_of: Vec<usize>,
    /// For a kernel root, the matmul that belongs to it.
    product_of: Vec<Option<usize>>,
}

impl Graph {
    fn collect(roots: &[&LazyBuffer], scratch: &mut Scratch) -> Graph {
        let mut graph = Graph {
            nodes: std::mem::take(&mut scratch.nodes),
            ops: std::mem::take(&mut scratch.ops),
            index: std::mem::take(&mut scratch.index),
            kernel_of: Vec::new(),
            product_of: Vec::new(),
        };
        // Iterative post-order DFS: deep graphs must not overflow the stack.
        let visited = &mut scratch.visited;
        visited.clear();
        let stack = &mut scratch.stack;
        for root in roots {
            if visited.insert(root.node.id)
                && let Some(op) = root.node.op()
            {
                stack.push((root.node.clone(), op));
            }
            while let Some((_, op)) = stack.last() {
                let next = op.inputs().into_iter().find(|i| !visited.contains(&i.node.id));
                match next {
                    Some(child) => {
                        visited.insert(child.node.id);
                        if let Some(child_op) = child.node.op() {
                            let child = child.node.clone();
                            stack.push((child, child_op));
                        }
                    }
                    None => {
                        let (node, op) = stack.pop().expect("the stack is not empty");
                        graph.index.insert(node.id, graph.nodes.len());
                        graph.nodes.push(node);
                        graph.ops.push(op);
                    }
                }
            }
        }
        graph
    }

    /// Empties the graph's lists into `scratch` for the next realization.
    fn recycle(self, scratch: &mut Scratch) {
        let Graph {
            mut nodes,
            mut ops,
            mut index,
            ..
        } = self;
        nodes.clear();
        ops.clear();
        index.clear();
        (scratch.nodes, scratch.ops, scratch.index) = (nodes, ops, index);
    }

    /// Assigns each node to a kernel, consumers before producers.
    fn group(&mut self, roots: &[&LazyBuffer], forced: &FastSet<u64>) {
        let n = self.nodes.len();
        // What each node's consumers are, filled in as they are assigned: consumers come later in
        // topological order, so when the reverse pass reaches a node all of them are known.
        let mut consumed_by = vec![Consumers::None; n];
        let requested: FastSet<u64> = roots.iter().map(|r| r.node.id).collect();
        let mut kernel_size = vec![0usize; n];
        self.kernel_of = (0..n).collect();
        for i in (0..n).rev() {
            let id = self.nodes[i].id;
            let fusable = self.ops[i].is_elementwise() && !requested.contains(&id) && !forced.contains(&id);
            let fits = |set: &KernelSet| set.ids().iter().all(|&k| kernel_size[k] < MAX_FUSED_OPS);
            // The kernels that read node `i`'s value: its consumers' if it joins them, else its own.
            let readers = match consumed_by[i] {
                Consumers::Kernels(set) if fusable && set.len == 1 && fits(&set) => {
                    self.kernel_of[i] = set.ids[0];
                    set
                }
                Consumers::Kernels(set)
                    if fusable && fits(&set) && recompute_pays(&self.ops[i], numel(&self.nodes[i].shape)) =>
                {
                    self.kernel_of[i] = RECOMPUTED;
                    set
                }
                _ => KernelSet::one(i),
            };
            for &k in readers.ids() {
                kernel_size[k] += 1;
            }
            let reads_buffers = self.ops[i].reads_buffers();
            for input in self.ops[i].inputs() {
                if let Some(&j) = self.index.get(&input.node.id) {
                    consumed_by[j] = match consumed_by[j] {
                        _ if reads_buffers || recomputes_broadcast(input, &self.ops[j]) => {
                            Consumers::Unfusable
                        }
                        Consumers::None => Consumers::Kernels(readers),
                        Consumers::Kernels(set) => set
                            .union(&readers)
                            .map_or(Consumers::Unfusable, Consumers::Kernels),
                        Consumers::Unfusable => Consumers::Unfusable,
                    };
                }
            }
        }
        self.product_of = vec![None; n];
        for (i, consumers) in consumed_by.into_iter().enumerate() {
            // The same shape: a kernel over part of the product (a shrunk view) would otherwise
            // keep the whole product's buffer as its own.
            if let (Op::MatMul(..), Consumers::Kernels(set)) = (&self.ops[i], consumers)
                && let &[k] = set.ids()
                && self.ops[k].is_elementwise()
                && self.nodes[k].shape == self.nodes[i].shape
                && self.product_of[k].is_none()
                && !requested.contains(&self.nodes[i].id)
            {
                self.product_of[k] = Some(i);
                self.kernel_of[i] = k;
            }
        }
    }

    /// Plans every kernel root in topological order, running nothing. `Err(id)` names a node
    /// that must be a root. With the steps, whether they depend on the graph's structure alone
    /// (not on a node realized meanwhile by another thread), so a later graph can replay them.
    fn plan(
        &self,
        memo: &mut FastMap<(u64, View), usize>,
        signature: &Signature,
    ) -> Result<(Vec<Step>, bool), u64> {
        let mut steps = Vec::new();
        let mut replayable = true;
        for i in 0..self.nodes.len() {
            if self.kernel_of[i] != i {
                continue;
            }
            if self.nodes[i].is_realized() {
                replayable = false;
                continue;
            }
            match &self.ops[i] {
                Op::MatMul(..) => steps.push(Step::MatMul(i)),
                Op::Index(..) | Op::Cat(..) => steps.push(Step::Copy(i)),
                op => {
                    let (plan, structural) = self.build(i, op, memo, &signature.slots)?;
                    replayable &= structural;
                    if let Some(p) = self.product_of[i] {
                        if self.nodes[p].is_realized() {
                            // Realized by another thread: a replay would not have it.
                            replayable = false;
                        } else if let Some(epilogue) = Epilogue::recognize(&plan, p) {
                            steps.push(Step::Product {
                                product: p,
                                kernel: i,
                                plan,
                                epilogue,
                            });
                            continue;
                        } else {
                            steps.push(Step::MatMul(p));
                        }
                    }
                    steps.push(Step::Fused(i, plan));
                }
            }
        }
        memo.clear();
        Ok((steps, replayable))
    }

    /// Runs `steps`, planned for a graph of this structure (this one's, or an earlier one's being
    /// replayed), skipping kernels another thread has realized meanwhile. The graph lets go of
    /// each node and op once no later step needs it, so an intermediate whose readers have all
    /// run is freed then (unless held elsewhere), its buffer back in the pool for the next
    /// outputs: one realization of a deep graph peaked at the sum of all its kernels' outputs when
    /// the graph held everything to its end.
    fn execute(&mut self, steps: &[Step], externals: &[Arc<Node>], live: &mut Live) {
        let outputs: usize = (steps.iter())
            .map(|step| self.nodes[step.output()].shape.iter().product::<usize>())
            .sum();
        // Debug builds always let go, so every test graph exercises it.
        if outputs.saturating_mul(size_of::<f32>()) < RELEASE_FROM && !cfg!(debug_assertions) {
            run_steps(self, steps, externals);
        } else {
            live.take(self, steps);
            run_steps(live, steps, externals);
            live.clear();
        }
    }

    /// Debug builds check every replay against a fresh schedule of the same graph.
    #[cfg(debug_assertions)]
    fn check_replay(
        &mut self,
        roots: &[&LazyBuffer],
        steps: &[Step],
        signature: &Signature,
        memo: &mut FastMap<(u64, View), usize>,
    ) {
        self.group(roots, &FastSet::default());
        let plans: FastMap<usize, &KernelPlan> = (steps.iter())
            .filter_map(|step| match step {
                Step::Fused(i, plan) | Step::Product { kernel: i, plan, .. } => Some((*i, plan)),
                Step::MatMul(_) | Step::Copy(_) => None,
            })
            .collect();
        // Each kernel root in order, with the product it ran with (a matmul belonging to it
        // runs as a step of its own just before it unless the kernel is an epilogue).
        let mut expected = Vec::new();
        for i in (0..self.nodes.len()).filter(|&i| self.kernel_of[i] == i) {
            match (self.product_of[i], plans.get(&i)) {
                (Some(p), Some(plan)) if Epilogue::recognize(plan, p).is_some() => {
                    expected.push((i, Some(p)))
                }
                (Some(p), _) => expected.extend([(p, None), (i, None)]),
                (None, _) => expected.push((i, None)),
            }
        }
        let replayed: Vec<(usize, Option<usize>)> = (steps.iter())
            .map(|step| match step {
                Step::MatMul(i) | Step::Copy(i) | Step::Fused(i, _) => (*i, None),
                Step::Product { product, kernel, .. } => (*kernel, Some(*product)),
            })
            .collect();
        assert_eq!(expected, replayed, "a replayed schedule has other kernels");
        for step in steps {
            let (i, plan) = match step {
                Step::Fused(i, plan) => (*i, plan),
                Step::Product {
                    product,
                    kernel,
                    plan,
                    epilogue,
                } => {
                    let fresh = Epilogue::recognize(plan, *product);
                    assert_eq!(
                        fresh.as_ref(),
                        Some(epilogue),
                        "epilogue of kernel {kernel} replayed"
                    );
                    (*kernel, plan)
                }
                Step::MatMul(_) | Step::Copy(_) => continue,
            };
            // A node another thread realized meanwhile is read, not recomputed, by a fresh
            // plan; the replay recomputes it, to the same values.
            match self.build(i, &self.ops[i], memo, &signature.slots) {
                Ok((fresh, true)) => assert_eq!(&fresh, plan, "kernel {i} replayed"),
                Ok((_, false)) => {}
                Err(id) => panic!("kernel {i} replayed, but node {id} does not compose"),
            }
        }
        memo.clear();
    }

    /// Plans the fused kernel rooted at node `root` (`memo` is scratch space). The flag is false
    /// if the plan depends on more than the graph's structure.
    fn build(
        &self,
        root: usize,
        op: &Op,
        memo: &mut FastMap<(u64, View), usize>,
        slots: &FastMap<u64, usize>,
    ) -> Result<(KernelPlan, bool), u64> {
        memo.clear();
        let mut builder = Builder {
            graph: self,
            kernel: root,
            slots,
            leaves: Vec::new(),
            program: Vec::new(),
            emitted: FastMap::default(),
            memo,
            structural: true,
        };
        let shape = self.nodes[root].shape.clone();
        let (shape, reduce) = match op {
            Op::Reduce(reduce_op, input, axes) => {
                builder.value_of(input, input.view.clone())?;
                (
                    AxisVec::from_slice(input.shape()),
                    Some((*reduce_op, axes.clone())),
                )
            }
            Op::Contiguous(input) => {
                builder.value_of(input, input.view.clone())?;
                (shape, None)
            }
            _ => {
                builder.fused(root, &View::contiguous(&shape))?;
                (shape, None)
            }
        };
        let structural = builder.structural;
        Ok((builder.finish(shape, reduce), structural))
    }
}

/// A matmul operand's buffer and view; a padded view is first copied out.
fn operand(input: &LazyBuffer) -> (Arc<Storage>, View) {
    let buf = input.node.buffer().expect("matmul inputs are realized before it");
    if input.view.mask().is_none() {
        return (buf, input.view.clone());
    }
    let mut copy = Storage::filled(input.numel(), 0.0);
    super::gather::gather(&buf, &input.view, 0, &mut copy);
    stats::fresh_copy(copy.len());
    (Arc::new(copy), View::contiguous(input.shape()))
}

struct Builder<'g> {
    graph: &'g Graph,
    kernel: usize,
    /// Slots of the graph's outside inputs.
    slots: &'g FastMap<u64, usize>,
    leaves: Vec<(Source, View)>,
    program: Vec<Instr>,
    /// Each instruction emitted, by its op and operands: two nodes computing the same thing
    /// from the same values (a composite's forward and its gradient each building `exp(x -
    /// max)`) share one result.
    emitted: FastMap<Instr, usize>,
    memo: &'g mut FastMap<(u64, View), usize>,
    /// False once the plan reads a node of its own kernel as a buffer (another thread realized
    /// it meanwhile): another graph of this structure would not have that buffer.
    structural: bool,
}

impl Builder<'_> {
    /// The kernel value of `input` read through `access` (a view over the kernel's shape onto the
    /// row-major layout of `input`'s node).
    fn value_of(&mut self, input: &LazyBuffer, access: View) -> Result<usize, u64> {
        let node = &input.node;
        if let Some(&v) = self.memo.get(&(node.id, access.clone())) {
            return Ok(v);
        }
        let position = self.graph.index.get(&node.id).copied();
        // A matmul belonging to this kernel is read from its buffer, like any other kernel's.
        let here = position.filter(|&j| {
            let k = self.graph.kernel_of[j];
            (k == self.kernel || k == RECOMPUTED) && self.graph.ops[j].is_elementwise()
        });
        let value = match here {
            Some(j) if !node.is_realized() => self.fused(j, &access)?,
            _ => {
                let source = match position {
                    Some(j) => {
                        self.structural &= here.is_none();
                        Source::Node(j)
                    }
                    None => Source::External(self.slots[&node.id]),
                };
                self.leaves.push((source, access.clone()));
                // Leaves are numbered before instructions; fix up indices in `finish`.
                usize::MAX - (self.leaves.len() - 1)
            }
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
        let value = self.emit(instr);
        // A padded `access` pushes its mask down to the leaves, which then read 0 in the padding;
        // the op itself must still give 0 there. Unless it maps zeros to +0 (then, by induction
        // over the fused inputs, it already does), select 0 through a mask leaf: `where(m, v, m)`
        // with `m` 1 inside the mask and 0 in the padding.
        if access.mask().is_some() && !op.preserves_zero() {
            self.leaves.push((Source::One, access.mask_only()));
            let mask = usize::MAX - (self.leaves.len() - 1);
            return Ok(self.emit(Instr::Where(mask, value, mask)));
        }
        Ok(value)
    }

    /// The value of `instr`: an identical instruction's already emitted, or its own.
    fn emit(&mut self, instr: Instr) -> usize {
        *self.emitted.entry(instr).or_insert_with(|| {
            self.program.push(instr);
            self.program.len() - 1
        })
    }

    /// Renumbers values: leaves `0..L`, instruction `i` is `L + i`.
    fn finish(self, shape: AxisVec<usize>, reduce: Option<(super::ReduceOp, AxisVec<usize>)>) -> KernelPlan {
        let leaves = self.leaves.len();
        let fix = |v: usize| {
            if v > usize::MAX / 2 {
                usize::MAX - v
            } else {
                leaves + v
            }
        };
        let mut program = self.program;
        for instr in &mut program {
            *instr = match *instr {
                Instr::Unary(op, a) => Instr::Unary(op, fix(a)),
                Instr::Binary(op, a, b) => Instr::Binary(op, fix(a), fix(b)),
                Instr::Where(c, a, b) => Instr::Where(fix(c), fix(a), fix(b)),
            };
        }
        KernelPlan {
            shape,
            program: Program::new(leaves, program),
            leaves: self.leaves,
            reduce,
        }
    }
}
