//! Graph nodes: one per non-movement operation. A node is either pending (it holds its operation and
//! so its inputs) or realized (it holds its buffer and has dropped its inputs).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use super::LazyBuffer;
use super::axes::AxisVec;
use super::ops::{BinaryOp, ReduceOp, UnaryOp};
use super::storage::Storage;

static NEXT_ID: AtomicU64 = AtomicU64::new(0);
static NODES_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// How many graph nodes exist right now, in the whole process.
pub fn nodes_alive() -> usize {
    NODES_ALIVE.load(Ordering::Relaxed)
}

/// What a pending node computes.
#[derive(Clone)]
pub(crate) enum Op {
    Unary(UnaryOp, LazyBuffer),
    Binary(BinaryOp, LazyBuffer, LazyBuffer),
    /// `cond != 0 ? a : b`
    Where(LazyBuffer, LazyBuffer, LazyBuffer),
    /// Reduces the listed axes of the input to size 1.
    Reduce(ReduceOp, LazyBuffer, AxisVec<usize>),
    /// `[.., m, k] x [.., k, n]`, batch axes equal.
    MatMul(LazyBuffer, LazyBuffer),
    /// A copy of a view into a fresh row-major buffer.
    Contiguous(LazyBuffer),
    /// Reads or writes the input's rows or columns at a list of indices (see [`Indexing`]).
    Index(Indexing, LazyBuffer, Arc<[usize]>),
    /// The first input then the second along the axis given, every other dim equal.
    Cat(LazyBuffer, LazyBuffer, usize),
}

/// One level of the graph, never the whole: the derived form recursed through every input (a
/// stack overflow on a chain of a few thousand ops) and printed a node shared by `n` paths `n`
/// times, each realized leaf with all its values.
impl std::fmt::Debug for LazyBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("LazyBuffer");
        out.field("node", &self.node.id);
        match self.node.op() {
            Some(op) => out.field("pending", &op),
            None => out.field("realized_values", &self.node.buffer().map_or(0, |b| b.len())),
        };
        out.field("view", &self.view).finish()
    }
}

/// An op with its inputs as node ids (see `LazyBuffer`'s `Debug`).
impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Unary(op, _) => write!(f, "{op:?}")?,
            Op::Binary(op, ..) => write!(f, "{op:?}")?,
            Op::Where(..) => write!(f, "Where")?,
            Op::Reduce(op, _, axes) => write!(f, "Reduce({op:?}, axes {:?})", &axes[..])?,
            Op::MatMul(..) => write!(f, "MatMul")?,
            Op::Contiguous(_) => write!(f, "Contiguous")?,
            Op::Index(kind, _, indices) => write!(f, "{kind:?}({} indices)", indices.len())?,
            Op::Cat(.., axis) => write!(f, "Cat(axis {axis})")?,
        }
        let inputs: Vec<u64> = self.inputs().iter().map(|b| b.node.id).collect();
        write!(f, " of nodes {inputs:?}")
    }
}

/// What an [`Op::Index`] does with its input `x` and its indices `idx`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Indexing {
    /// `[b, c]` to `[b, 1]`: row `i`'s value at column `idx[i]`.
    PickColumns,
    /// `[v, d]` to `[n, d]`: row `i` is row `idx[i]` of `x`.
    PickRows,
    /// `[n, d]` to `[v, d]` (`v` from the node's shape): row `i` of `x` added into row `idx[i]`,
    /// in order of `i` (the gradient of [`Indexing::PickRows`]).
    AddRows,
}

/// The one to three inputs of an op, held inline: listing them is frequent in scheduling and
/// dropping, and must not allocate.
pub(crate) struct Inputs<'a> {
    items: [&'a LazyBuffer; 3],
    len: usize,
}

impl<'a> std::ops::Deref for Inputs<'a> {
    type Target = [&'a LazyBuffer];

    fn deref(&self) -> &Self::Target {
        &self.items[..self.len]
    }
}

impl<'a> IntoIterator for Inputs<'a> {
    type Item = &'a LazyBuffer;
    type IntoIter = std::iter::Take<std::array::IntoIter<&'a LazyBuffer, 3>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().take(self.len)
    }
}

impl Op {
    pub(crate) fn inputs(&self) -> Inputs<'_> {
        let (items, len) = match self {
            Op::Unary(_, a) | Op::Reduce(_, a, _) | Op::Contiguous(a) | Op::Index(_, a, _) => ([a, a, a], 1),
            Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::Cat(a, b, _) => ([a, b, b], 2),
            Op::Where(c, a, b) => ([c, a, b], 3),
        };
        Inputs { items, len }
    }

    pub(crate) fn is_elementwise(&self) -> bool {
        matches!(self, Op::Unary(..) | Op::Binary(..) | Op::Where(..))
    }

    /// True for ops that read their inputs from buffers, so no input fuses into them.
    pub(crate) fn reads_buffers(&self) -> bool {
        matches!(self, Op::MatMul(..) | Op::Index(..) | Op::Cat(..))
    }

    /// True for elementwise ops that cost many times an add: transcendentals, roots and
    /// divisions.
    pub(crate) fn is_costly(&self) -> bool {
        match self {
            Op::Unary(op, _) => !matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Relu),
            Op::Binary(op, _, _) => matches!(op, BinaryOp::Div | BinaryOp::Pow),
            _ => false,
        }
    }

    /// True for elementwise ops that give exactly `+0.0` when every input is `+0.0`.
    pub(crate) fn preserves_zero(&self) -> bool {
        match self {
            Op::Unary(op, _) => matches!(
                op,
                UnaryOp::Sqrt
                    | UnaryOp::Sin
                    | UnaryOp::Abs
                    | UnaryOp::Tanh
                    | UnaryOp::Relu
                    | UnaryOp::Erf
                    | UnaryOp::Gelu
            ),
            Op::Binary(op, _, _) => matches!(
                op,
                BinaryOp::Add
                    | BinaryOp::Sub
                    | BinaryOp::Mul
                    | BinaryOp::Max
                    | BinaryOp::Min
                    | BinaryOp::CmpLt
            ),
            Op::Where(..) => true,
            Op::Reduce(..) | Op::MatMul(..) | Op::Contiguous(..) | Op::Index(..) | Op::Cat(..) => false,
        }
    }

    fn into_inputs(self) -> impl Iterator<Item = LazyBuffer> {
        match self {
            Op::Unary(_, a) | Op::Reduce(_, a, _) | Op::Contiguous(a) | Op::Index(_, a, _) => {
                [Some(a), None, None]
            }
            Op::Binary(_, a, b) | Op::MatMul(a, b) | Op::Cat(a, b, _) => [Some(a), Some(b), None],
            Op::Where(c, a, b) => [Some(c), Some(a), Some(b)],
        }
        .into_iter()
        .flatten()
    }
}

/// What a new node starts as.
#[derive(Debug)]
pub(crate) enum State {
    Pending(Op),
    Realized(Arc<Storage>),
}

/// A node's operation is kept until it is realized (and then dropped with its inputs); its
/// buffer, once set, is read without a lock. Scheduling asks every node of a graph whether it
/// is realized and reads its inputs' buffers, and each such question took a mutex, two locked
/// instructions, when both lived behind one.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) id: u64,
    /// The shape of the node's output, stored row-major once realized.
    pub(crate) shape: AxisVec<usize>,
    op: Mutex<Option<Op>>,
    buf: OnceLock<Arc<Storage>>,
}

impl Node {
    pub(crate) fn new(shape: &[usize], state: State) -> Arc<Node> {
        NODES_ALIVE.fetch_add(1, Ordering::Relaxed);
        let (op, buf) = match state {
            State::Pending(op) => (Some(op), OnceLock::new()),
            State::Realized(buf) => (None, OnceLock::from(buf)),
        };
        Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            shape: AxisVec::from_slice(shape),
            op: Mutex::new(op),
            buf,
        })
    }

    /// The pending operation, under its lock (`None` once realized).
    pub(crate) fn pending(&self) -> MutexGuard<'_, Option<Op>> {
        // A panic while holding the lock leaves the op consistent: it is only ever taken whole.
        self.op.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The buffer, if realized.
    pub(crate) fn buffer(&self) -> Option<Arc<Storage>> {
        self.buf.get().cloned()
    }

    /// Whether the node holds its buffer (without taking a reference to it).
    pub(crate) fn is_realized(&self) -> bool {
        self.buf.get().is_some()
    }

    /// The operation, if pending.
    pub(crate) fn op(&self) -> Option<Op> {
        if self.is_realized() {
            return None;
        }
        self.pending().clone()
    }

    /// The buffer of a realized node, for writing in place when nothing else can see it.
    pub(crate) fn buffer_mut(&mut self) -> Option<&mut Arc<Storage>> {
        self.buf.get_mut()
    }

    /// Stores the result and drops the inputs. A node another thread realized meanwhile keeps
    /// its first buffer (the values are the same).
    pub(crate) fn set_realized(&self, buf: Arc<Storage>) {
        if let Err(buf) = self.buf.set(buf) {
            super::alloc::recycle(buf);
        }
        let op = self.pending().take();
        drop(op);
    }

    /// Takes what a node being dropped holds: its op, after recycling its buffer.
    fn dismantle(&mut self) -> Option<Op> {
        if let Some(buf) = self.buf.take() {
            super::alloc::recycle(buf);
        }
        self.op.get_mut().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Drop for Node {
    /// Drops a chain of pending nodes iteratively: a 100,000-op graph would overflow the stack if
    /// each node dropped its inputs recursively.
    fn drop(&mut self) {
        NODES_ALIVE.fetch_sub(1, Ordering::Relaxed);
        let Some(op) = self.dismantle() else {
            return;
        };
        // Only the ops of nodes this drop owns alone go on the stack (which then allocates);
        // shared nodes are just released. Ops, not nodes, are moved: a node is twice the size.
        let mut stack: Vec<Op> = Vec::new();
        // `into_inner` releases a shared input in one locked instruction, where asking
        // `get_mut` first and then dropping took two.
        let release = |op: Op, stack: &mut Vec<Op>| {
            for input in op.into_inputs().map(|b| b.node) {
                if let Some(op) = Arc::into_inner(input).as_mut().and_then(Node::dismantle) {
                    stack.push(op);
                }
            }
        };
        release(op, &mut stack);
        while let Some(op) = stack.pop() {
            release(op, &mut stack);
        }
    }
}
