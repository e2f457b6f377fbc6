//! Reusing a schedule: a training loop realizes a graph of the same structure every step (new
//! nodes, new values, the same operations, shapes and views). Grouping nodes into kernels and
//! building each kernel's program depend on that structure alone, so the result is kept, keyed by
//! a complete description of the structure, and replayed on the next graph that matches it.
//!
//! A plan names nodes by their position in the graph's topological order and inputs from outside
//! the graph by the order in which they are first read, never by identity, so it applies to any
//! graph with the same description.

use std::rc::Rc;
use std::sync::Arc;

use super::LazyBuffer;
use super::axes::AxisVec;
use super::epilogue::Epilogue;
use super::fast_hash::FastMap;
use super::kernel::{FusedKernel, Leaf, Program};
use super::node::{Node, Op};
use super::ops::ReduceOp;
use super::storage::Storage;
use super::view::View;

/// Where a kernel leaf's buffer comes from.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Source {
    /// The graph's node at this position, realized by an earlier kernel of the same run.
    Node(usize),
    /// The realized input from outside the graph with this slot (see [`Signature`]).
    External(usize),
    /// A single `1.0`: the mask leaf that zeroes padding.
    One,
}

impl Source {
    /// The buffer it names, given the buffer of the graph's node at each position (`node`) and
    /// the outside inputs (`externals`).
    pub(super) fn buffer(
        &self,
        node: impl Fn(usize) -> Option<Arc<Storage>>,
        externals: &[Arc<Node>],
    ) -> Arc<Storage> {
        let buf = match self {
            Source::Node(j) => node(*j),
            Source::External(slot) => externals[*slot].buffer(),
            Source::One => Some(Arc::new(Storage::from_slice(&[1.0]))),
        };
        buf.expect("a kernel's inputs are realized before it runs")
    }
}

/// A fused kernel whose leaves are described by where they come from.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct KernelPlan {
    pub(super) shape: AxisVec<usize>,
    pub(super) leaves: Vec<(Source, View)>,
    pub(super) program: Program,
    pub(super) reduce: Option<(ReduceOp, AxisVec<usize>)>,
}

impl KernelPlan {
    /// The runnable kernel, reading the graph's nodes' buffers through `node` (by position) and
    /// `externals` (by slot).
    pub(super) fn bind(
        &self,
        node: impl Fn(usize) -> Option<Arc<Storage>>,
        externals: &[Arc<Node>],
    ) -> FusedKernel {
        let leaves = (self.leaves.iter())
            .map(|(source, view)| Leaf {
                buf: source.buffer(&node, externals),
                view: view.clone(),
            })
            .collect();
        FusedKernel {
            shape: self.shape.clone(),
            leaves,
            program: self.program.clone(),
            reduce: self.reduce.clone(),
        }
    }
}

/// One kernel of a run, in order, by the position of its root.
#[derive(Clone, Debug)]
pub(super) enum Step {
    MatMul(usize),
    /// An [`Op::Index`] or [`Op::Cat`]: a copy from realized inputs.
    Copy(usize),
    Fused(usize, KernelPlan),
    /// The matmul at `product` with the epilogue that the fused kernel at `kernel` (its only
    /// reader, planned as `plan`) computes, into `kernel`'s node.
    Product {
        product: usize,
        kernel: usize,
        plan: KernelPlan,
        epilogue: Epilogue,
    },
}

impl Step {
    /// The node the step writes: its root, or for a product with an epilogue, the kernel's.
    pub(super) fn output(&self) -> usize {
        match self {
            Step::MatMul(i) | Step::Copy(i) | Step::Fused(i, _) | Step::Product { kernel: i, .. } => *i,
        }
    }
}

/// Graphs of more nodes are neither described nor kept: their description would be large, and
/// such a graph (a very deep chain) is rarely realized twice.
const MAX_DESCRIBED_NODES: usize = 1 << 12;

/// A complete description of a pending graph's structure (`None` if it is too large to keep),
/// and its outside inputs by slot.
#[derive(Default)]
pub(super) struct Signature {
    words: Option<Vec<u64>>,
    pub(super) externals: Vec<Arc<Node>>,
    /// Node id → slot, for the outside inputs.
    pub(super) slots: FastMap<u64, usize>,
}

impl Signature {
    /// Describes the graph `ops` (topological order, `index` mapping node ids to positions) whose
    /// requested roots are `roots`: per node its operation, shape and whether it was requested,
    /// and per input where it comes from and the view it is read through. Fills the lists of
    /// `spare` (an earlier signature, emptied by [`Signature::recycle`]) instead of new ones.
    pub(super) fn of(
        nodes: &[Arc<Node>],
        ops: &[Op],
        index: &FastMap<u64, usize>,
        roots: &[&LazyBuffer],
        spare: Signature,
    ) -> Self {
        let Signature {
            words,
            mut externals,
            mut slots,
        } = spare;
        // Outside inputs get slots in every graph: kernels name them by slot.
        for input in ops.iter().flat_map(Op::inputs) {
            if !index.contains_key(&input.node.id) && !slots.contains_key(&input.node.id) {
                slots.insert(input.node.id, externals.len());
                externals.push(input.node.clone());
            }
        }
        let words = (ops.len() <= MAX_DESCRIBED_NODES).then(|| {
            let mut words = words.unwrap_or_default();
            words.reserve(32 * ops.len());
            for (node, op) in nodes.iter().zip(ops) {
                words.push(u64::from(roots.iter().any(|r| r.node.id == node.id)));
                match op {
                    Op::Unary(u, _) => words.extend([0, *u as u64]),
                    Op::Binary(b, _, _) => words.extend([1, *b as u64]),
                    Op::Where(..) => words.push(2),
                    Op::Reduce(r, _, axes) => {
                        words.extend([3, *r as u64]);
                        push_list(&mut words, axes.iter().map(|&a| a as u64));
                    }
                    Op::MatMul(..) => words.push(4),
                    Op::Contiguous(_) => words.push(5),
                    Op::Index(kind, ..) => words.extend([6, *kind as u64]),
                    Op::Cat(_, _, axis) => words.extend([7, *axis as u64]),
                }
                push_list(&mut words, node.shape.iter().map(|&d| d as u64));
                for input in op.inputs() {
                    words.extend(match index.get(&input.node.id) {
                        Some(&j) => [0, j as u64],
                        None => [1, slots[&input.node.id] as u64],
                    });
                    push_view(&mut words, &input.view);
                }
            }
            words
        });
        Signature {
            words,
            externals,
            slots,
        }
    }

    /// Empties the signature, releasing the nodes it holds, and keeps its lists for the next.
    pub(super) fn recycle(&mut self) {
        if let Some(words) = &mut self.words {
            words.clear();
        }
        self.externals.clear();
        self.slots.clear();
    }
}

fn push_list(words: &mut Vec<u64>, values: impl ExactSizeIterator<Item = u64>) {
    words.push(values.len() as u64);
    words.extend(values);
}

fn push_view(words: &mut Vec<u64>, view: &View) {
    push_list(words, view.shape().iter().map(|&d| d as u64));
    push_list(words, view.strides().iter().map(|&s| s as u64));
    words.push(view.offset() as u64);
    match view.mask() {
        None => words.push(0),
        Some(mask) => {
            words.extend([1, mask.len() as u64]);
            words.extend(mask.iter().flat_map(|&(lo, hi)| [lo as u64, hi as u64]));
        }
    }
}

/// The plans of the last few distinct graphs realized on a thread, the most recently used last.
#[derive(Default)]
pub(super) struct Plans {
    entries: Vec<(Vec<u64>, Rc<[Step]>)>,
    /// The words all the entries' descriptions hold (their lists' capacities).
    words: usize,
}

/// A training loop realizes a few distinct graphs (the step, the step on a last, shorter batch,
/// an evaluation pass, a printed loss), and each run-time size is a structure of its own. With 8
/// kept, a 64→128→10 step cycling through 20 batch sizes reused 8 schedules in 600 steps and took
/// 1.4 times as long per step as at one size (one thread); with 32, it reused 588. More than this
/// many and the least recently used is forgotten. A lookup compares descriptions one by one,
/// the most recently used first.
const PLANS_KEPT: usize = 32;

/// At most this many words (8 MiB) of descriptions are kept, the least recently used forgotten
/// first: a description takes about 30 words a node, so a training step's (a few hundred nodes)
/// is tens of kilobytes, but 40 distinct graphs of 3,000 nodes each grew a thread's memory by
/// 72 MB with only the count bounded, and 16 MB with this bound too.
const PLAN_WORDS_KEPT: usize = 1 << 20;

impl Plans {
    /// The plan of a graph with this description, which becomes the most recently used.
    pub(super) fn get(&mut self, signature: &Signature) -> Option<Rc<[Step]>> {
        let words = signature.words.as_ref()?;
        let at = self.entries.iter().rposition(|(kept, _)| kept == words)?;
        let entry = self.entries.remove(at);
        let steps = entry.1.clone();
        self.entries.push(entry);
        Some(steps)
    }

    /// Keeps the steps of a graph (unless it was too large to describe), taking its description.
    pub(super) fn insert(&mut self, signature: &mut Signature, steps: Vec<Step>) {
        let Some(mut words) = signature.words.take() else {
            return;
        };
        // A description's list may be one reused from a larger graph's: what it holds is counted.
        words.shrink_to_fit();
        while !self.entries.is_empty()
            && (self.entries.len() == PLANS_KEPT || self.words + words.capacity() > PLAN_WORDS_KEPT)
        {
            self.words -= self.entries.remove(0).0.capacity();
        }
        self.words += words.capacity();
        self.entries.push((words, steps.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(words: Vec<u64>) -> Signature {
        Signature {
            words: Some(words),
            ..Signature::default()
        }
    }

    /// Plans are forgotten least recently used first, past `PLANS_KEPT` of them or
    /// `PLAN_WORDS_KEPT` words of descriptions, whichever comes first.
    #[test]
    fn plans_are_bounded_by_count_and_by_size() {
        let mut plans = Plans::default();
        for k in 0..PLANS_KEPT as u64 + 5 {
            plans.insert(&mut described(vec![k; 10]), Vec::new());
        }
        assert_eq!(plans.entries.len(), PLANS_KEPT);
        assert!(plans.get(&described(vec![4; 10])).is_none());
        assert!(plans.get(&described(vec![5; 10])).is_some());
        // Large descriptions: only as many as fit the budget stay, the newest.
        let large = PLAN_WORDS_KEPT / 3;
        for k in 0..4 {
            plans.insert(&mut described(vec![100 + k; large]), Vec::new());
        }
        assert_eq!(plans.entries.len(), 3, "{}", plans.words);
        assert!(plans.words <= PLAN_WORDS_KEPT);
        assert_eq!(
            plans.words,
            plans.entries.iter().map(|(w, _)| w.capacity()).sum::<usize>()
        );
        assert!(plans.get(&described(vec![100; large])).is_none());
        assert!(plans.get(&described(vec![103; large])).is_some());
        // A small description in a list reserved for a large one holds only what it needs.
        let mut roomy = Vec::with_capacity(PLAN_WORDS_KEPT / 2);
        roomy.extend([9; 10]);
        plans.insert(&mut described(roomy), Vec::new());
        // (Counted at its list's capacity, half the budget, it would have pushed out two.)
        assert!(plans.words <= PLAN_WORDS_KEPT);
        assert_eq!(plans.entries.len(), 3);
        // One larger than the whole budget is still kept, alone.
        plans.insert(&mut described(vec![7; PLAN_WORDS_KEPT + 1]), Vec::new());
        assert_eq!(plans.entries.len(), 1);
    }
}
