//! Reverse-mode autodiff. A tracked value carries the record of the operation that made it (a
//! [`GradNode`] pointing at its inputs' records); `backward` walks those records in reverse
//! topological order, iteratively, and accumulates gradients into the leaves.
//!
//! Every backward rule here is written in lazy ops, so gradient graphs are lazy and fuse too.

mod ops;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use crate::lazy::LazyBuffer;
use crate::lazy::fast_hash::{FastMap, FastSet};

/// How an operation's output gradient becomes its inputs' gradients (one per input, in order).
pub(crate) type BackwardFn = Box<dyn FnOnce(&LazyBuffer) -> Grads + Send + Sync>;

/// The gradients of an operation's one to three inputs, in order, held inline (a `Vec` was an
/// allocation per operation that backward runs through).
pub(crate) struct Grads {
    items: [Option<LazyBuffer>; 3],
}

impl<const N: usize> From<[LazyBuffer; N]> for Grads {
    /// # Panics
    /// If `N > 3` (no operation has more inputs).
    fn from(grads: [LazyBuffer; N]) -> Self {
        assert!(N <= 3, "gradients for {N} inputs");
        let mut items = [None, None, None];
        for (item, g) in items.iter_mut().zip(grads) {
            *item = Some(g);
        }
        Grads { items }
    }
}

impl Grads {
    fn len(&self) -> usize {
        self.items.iter().flatten().count()
    }
}

impl IntoIterator for Grads {
    type Item = LazyBuffer;
    type IntoIter = std::iter::Flatten<std::array::IntoIter<Option<LazyBuffer>, 3>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter().flatten()
    }
}

/// The record of how a tracked value was made.
pub(crate) struct GradNode {
    kind: NodeKind,
}

enum NodeKind {
    /// A parameter: its value, which every clone reads (so all of them see an optimizer's
    /// step), and its gradient, which accumulates until zeroed.
    Leaf {
        value: Mutex<LazyBuffer>,
        grad: Mutex<Option<LazyBuffer>>,
    },
    /// An operation: its inputs' records (`None` for untracked inputs) and its backward rule,
    /// taken (and so freed) when backward runs through it.
    Op {
        inputs: InputRecords,
        backward: Mutex<Option<BackwardFn>>,
    },
}

/// The records of an operation's one to three inputs, held inline: as a `Vec` they were an
/// allocation per recorded operation (ten in a small training step).
struct InputRecords {
    items: [Option<Arc<GradNode>>; 3],
    len: u8,
}

impl InputRecords {
    /// # Panics
    /// If there are more than three inputs (no operation has more).
    fn of(inputs: &[&Var]) -> Self {
        assert!(inputs.len() <= 3, "an operation of {} inputs", inputs.len());
        let mut items = [None, None, None];
        for (item, input) in items.iter_mut().zip(inputs) {
            item.clone_from(&input.node);
        }
        InputRecords {
            items,
            len: inputs.len() as u8,
        }
    }

    /// Takes the tracked inputs' records out, leaving none.
    fn take_all(&mut self) -> impl Iterator<Item = Arc<GradNode>> + '_ {
        self.items.iter_mut().filter_map(Option::take)
    }
}

impl std::ops::Deref for InputRecords {
    type Target = [Option<Arc<GradNode>>];

    fn deref(&self) -> &Self::Target {
        &self.items[..self.len as usize]
    }
}

impl std::fmt::Debug for GradNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            NodeKind::Leaf { .. } => f.write_str("GradNode::Leaf"),
            NodeKind::Op { inputs, .. } => write!(f, "GradNode::Op({} inputs)", inputs.len()),
        }
    }
}

impl Drop for GradNode {
    /// Iterative drop: a 100,000-op chain of records must not overflow the stack.
    fn drop(&mut self) {
        let NodeKind::Op { inputs, .. } = &mut self.kind else {
            return;
        };
        // Only records this drop owns alone go on the stack (which then allocates); shared ones,
        // the common case, are just released.
        let mut stack: Vec<GradNode> = Vec::new();
        let release = |inputs: &mut InputRecords, stack: &mut Vec<GradNode>| {
            stack.extend(inputs.take_all().filter_map(|i| Arc::try_unwrap(i).ok()));
        };
        release(inputs, &mut stack);
        while let Some(mut node) = stack.pop() {
            if let NodeKind::Op { inputs, .. } = &mut node.kind {
                release(inputs, &mut stack);
            }
        }
    }
}

/// A lazy value and, if it is tracked, its record. The untyped core of `Tensor`.
#[derive(Clone, Debug)]
pub struct Var {
    /// The value, but for a leaf (`None`): a parameter's value lives in its record, shared by
    /// every clone, so a clone kept across an optimizer step does not feed gradients computed
    /// from old values into the updated parameter.
    own: Option<LazyBuffer>,
    pub(crate) node: Option<Arc<GradNode>>,
}

impl Var {
    pub(crate) fn untracked(buf: LazyBuffer) -> Var {
        Var {
            own: Some(buf),
            node: None,
        }
    }

    /// A new leaf that accumulates gradients.
    pub(crate) fn leaf(buf: LazyBuffer) -> Var {
        let node = GradNode {
            kind: NodeKind::Leaf {
                value: Mutex::new(buf),
                grad: Mutex::new(None),
            },
        };
        Var {
            own: None,
            node: Some(Arc::new(node)),
        }
    }

    /// The value: a leaf's current one (a handle to it), anything else's own.
    pub(crate) fn buf(&self) -> Cow<'_, LazyBuffer> {
        match &self.own {
            Some(buf) => Cow::Borrowed(buf),
            None => Cow::Owned(lock(self.leaf_value().expect("only a leaf has no value of its own")).clone()),
        }
    }

    /// A new parameter starting at this leaf's current value (sharing its buffer until either
    /// is updated), with no gradient; anything else, a clone.
    pub(crate) fn fresh_leaf(&self) -> Var {
        match self.leaf_value() {
            Some(value) => Var::leaf(lock(value).clone()),
            None => self.clone(),
        }
    }

    /// A leaf's value cell.
    fn leaf_value(&self) -> Option<&Mutex<LazyBuffer>> {
        match &self.node.as_deref()?.kind {
            NodeKind::Leaf { value, .. } => Some(value),
            NodeKind::Op { .. } => None,
        }
    }

    /// Identifies a leaf across its clones (`None` for anything else), so a pass over a model's
    /// parameters can visit a parameter held twice (tied weights) once.
    pub(crate) fn leaf_id(&self) -> Option<*const GradNode> {
        self.leaf_value().and(self.node.as_ref().map(Arc::as_ptr))
    }

    /// The result `buf` of an operation on `inputs`. The backward rule is only built (and the
    /// values it needs only kept) when some input is tracked.
    pub(crate) fn record(buf: LazyBuffer, inputs: &[&Var], backward: impl FnOnce() -> BackwardFn) -> Var {
        if inputs.iter().all(|v| v.node.is_none()) {
            return Var::untracked(buf);
        }
        let node = GradNode {
            kind: NodeKind::Op {
                inputs: InputRecords::of(inputs),
                backward: Mutex::new(Some(backward())),
            },
        };
        Var {
            own: Some(buf),
            node: Some(Arc::new(node)),
        }
    }

    /// The same value, untracked.
    pub(crate) fn detach(&self) -> Var {
        Var::untracked(self.buf().into_owned())
    }

    /// The accumulated gradient of a leaf.
    pub(crate) fn grad(&self) -> Option<LazyBuffer> {
        match &self.node.as_ref()?.kind {
            NodeKind::Leaf { grad, .. } => lock(grad).clone(),
            NodeKind::Op { .. } => None,
        }
    }

    /// Clears a leaf's gradient.
    pub(crate) fn zero_grad(&self) {
        if let Some(node) = &self.node
            && let NodeKind::Leaf { grad, .. } = &node.kind
        {
            *lock(grad) = None;
        }
    }

    /// Multiplies a leaf's accumulated gradient, if any, by `factor` (in place when nothing else
    /// holds the gradient's buffer).
    pub(crate) fn scale_grad(&self, factor: f32) {
        if let Some(node) = &self.node
            && let NodeKind::Leaf { grad, .. } = &node.kind
            && let Some(grad) = lock(grad).as_mut()
        {
            grad.update(|values| values.iter_mut().for_each(|v| *v *= factor));
        }
    }

    /// Replaces a leaf's value with `buf`, keeping its identity and gradient (every clone sees
    /// the new value); an untracked value's is replaced in this handle alone.
    pub(crate) fn set_leaf_value(&mut self, buf: LazyBuffer) {
        debug_assert_eq!(self.buf().shape(), buf.shape());
        match self.leaf_value() {
            Some(value) => *lock(value) = buf,
            None => self.own = Some(buf),
        }
    }

    /// Rewrites a leaf's values (in place when no pending graph reads them), keeping its
    /// identity and gradient: what optimizers use.
    pub(crate) fn update_leaf(&mut self, f: impl FnOnce(&mut [f32])) {
        match self.leaf_value() {
            Some(value) => lock(value).update(f),
            None => self.own.as_mut().expect("a value").update(f),
        }
    }

    /// Backpropagates `seed` (the gradient of this value) into every leaf it depends on, then
    /// realizes the leaves' gradients together.
    ///
    /// Panics, before any gradient changes and leaving the graph as it was, if part of it was
    /// already consumed by an earlier `backward` (its rules are freed as they run), or is being
    /// consumed by one on another thread — build the forward pass again instead.
    #[track_caller]
    pub(crate) fn backward_with(&self, seed: LazyBuffer) {
        let Some(root) = &self.node else { return };
        let order = topological_order(root);
        let mut rules = take_rules(&order);
        let mut grads: FastMap<*const GradNode, LazyBuffer> = FastMap::default();
        grads.insert(Arc::as_ptr(root), seed);
        let mut touched_leaves = Vec::new();
        for (&node, rule) in order.iter().zip(&mut rules).rev() {
            let Some(grad) = grads.remove(&(node as *const GradNode)) else {
                continue;
            };
            match &node.kind {
                NodeKind::Leaf { grad: slot, .. } => {
                    // Stored row-major, so optimizers read it without a gather.
                    let grad = grad.contiguous();
                    let mut slot = lock(slot);
                    *slot = Some(match slot.take() {
                        Some(old) => old.add(&grad),
                        None => grad,
                    });
                    touched_leaves.push(node);
                }
                NodeKind::Op { inputs, .. } => {
                    let rule = rule.take().expect("every operation's rule was taken");
                    let input_grads = rule(&grad);
                    debug_assert_eq!(input_grads.len(), inputs.len());
                    for (input, g) in inputs.iter().zip(input_grads) {
                        let Some(input) = input else { continue };
                        let key = Arc::as_ptr(input);
                        let sum = match grads.remove(&key) {
                            Some(old) => old.add(&g),
                            None => g,
                        };
                        grads.insert(key, sum);
                    }
                }
            }
        }
        let leaf_grads: Vec<LazyBuffer> = touched_leaves
            .iter()
            .filter_map(|n| match &n.kind {
                NodeKind::Leaf { grad, .. } => lock(grad).clone(),
                NodeKind::Op { .. } => None,
            })
            .collect();
        LazyBuffer::realize_all(&leaf_grads.iter().collect::<Vec<_>>());
    }
}

/// The backward rule of every operation in `order` (`None` for a leaf), taken all or none.
///
/// Panics, having put back those it took, if one was taken before. Found midway through the
/// backward pass, the leaves reached first would keep their gradients (and the recomputed
/// backward the message asks for would add them twice); checked first and taken as the pass
/// reaches them, another thread's backward through a shared part could take one in between.
#[track_caller]
fn take_rules(order: &[&GradNode]) -> Vec<Option<BackwardFn>> {
    fn rule_slot(node: &GradNode) -> Option<&Mutex<Option<BackwardFn>>> {
        match &node.kind {
            NodeKind::Op { backward, .. } => Some(backward),
            NodeKind::Leaf { .. } => None,
        }
    }
    let mut rules = Vec::with_capacity(order.len());
    for &node in order {
        let Some(slot) = rule_slot(node) else {
            rules.push(None);
            continue;
        };
        // Taken in a statement of its own: as a `match` scrutinee, the guard would be held
        // while the rules are given back below, and two threads giving back rules of two shared
        // nodes, each holding the one the other needs, would wait for each other for ever.
        let taken = lock(slot).take();
        match taken {
            Some(rule) => rules.push(Some(rule)),
            None => {
                for (&node, rule) in order.iter().zip(rules) {
                    if let (Some(slot), Some(rule)) = (rule_slot(node), rule) {
                        *lock(slot) = Some(rule);
                    }
                }
                panic!(
                    "backward through a graph whose backward already ran (or is running on \
                     another thread); recompute the forward pass"
                );
            }
        }
    }
    rules
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records reachable from `root`, inputs before the operations that use them (iterative DFS).
/// Borrowed, not cloned: `root` keeps every one of them alive, and reference counts were a
/// visible part of building a small step's backward graph.
fn topological_order(root: &GradNode) -> Vec<&GradNode> {
    // A small training step's graph has a few dozen nodes: room for them up front saves growing
    // each list several times.
    let mut order = Vec::with_capacity(64);
    let mut seen: FastSet<*const GradNode> = FastSet::with_capacity_and_hasher(64, Default::default());
    let mut stack: Vec<(&GradNode, usize)> = Vec::with_capacity(64);
    stack.push((root, 0));
    seen.insert(root);
    while let Some((node, next)) = stack.last_mut() {
        let inputs: &[Option<Arc<GradNode>>] = match &node.kind {
            NodeKind::Op { inputs, .. } => inputs,
            NodeKind::Leaf { .. } => &[],
        };
        match inputs[*next..].iter().position(|i| i.is_some()) {
            Some(skip) => {
                let child: &GradNode = inputs[*next + skip].as_deref().expect("some");
                *next += skip + 1;
                if seen.insert(child) {
                    stack.push((child, 0));
                }
            }
            None => {
                order.push(*node);
                stack.pop();
            }
        }
    }
    order
}
