//! Large random graphs whose nodes are read by several kernels (seeded random cases): realized
//! together, where the scheduler recomputes shared nodes of 2^18 values or more in each kernel
//! that reads them (costly ops such as exponentials only on CPUs with AVX-512) and runs repeated
//! instructions once, they equal the same graphs with every node realized alone, in order, each
//! from stored inputs, bit for bit.
//!
//! Each case starts from two realized [512, 512] leaves and applies 3 to 12 random steps to
//! earlier values: functions defined everywhere, binary ops between two of them or between two
//! functions of one, a row's maximum or sum broadcast back over its row, a transposed copy added
//! back, or (often) a step repeated exactly, which builds a second node identical to the first.
//! Up to four values are realized together.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::lazy::{BinaryOp, LazyBuffer, UnaryOp};

/// Functions defined everywhere, so values stay numbers (a NaN would hide a wrong result):
/// square roots and logs see `|x|` and `1 + x²`, exponentials `tanh(x)`.
#[derive(Clone, Copy, Debug)]
enum Function {
    Op(UnaryOp),
    SqrtAbs,
    LogOnePlusSquare,
    ExpTanh,
}

const FUNCTIONS: [Function; 9] = [
    Function::Op(UnaryOp::Neg),
    Function::Op(UnaryOp::Relu),
    Function::Op(UnaryOp::Abs),
    Function::Op(UnaryOp::Tanh),
    Function::Op(UnaryOp::Sin),
    Function::Op(UnaryOp::Sigmoid),
    Function::SqrtAbs,
    Function::LogOnePlusSquare,
    Function::ExpTanh,
];

/// Every node a case creates, in order, so that each can be realized alone.
#[derive(Default)]
struct Nodes(Vec<LazyBuffer>);

impl Nodes {
    fn keep(&mut self, node: LazyBuffer) -> LazyBuffer {
        self.0.push(node.clone());
        node
    }

    fn function(&mut self, f: Function, x: &LazyBuffer) -> LazyBuffer {
        match f {
            Function::Op(op) => self.keep(x.unary(op)),
            Function::SqrtAbs => {
                let abs = self.keep(x.unary(UnaryOp::Abs));
                self.keep(abs.unary(UnaryOp::Sqrt))
            }
            Function::LogOnePlusSquare => {
                let y = self.one_plus_square(x);
                self.keep(y.unary(UnaryOp::Log))
            }
            Function::ExpTanh => {
                let tanh = self.keep(x.unary(UnaryOp::Tanh));
                self.keep(tanh.unary(UnaryOp::Exp))
            }
        }
    }

    fn one_plus_square(&mut self, x: &LazyBuffer) -> LazyBuffer {
        let square = self.keep(x.mul(x));
        self.keep(square.add(&LazyBuffer::full(x.shape(), 1.0)))
    }

    /// `a op b` for `op` among add, sub, mul, max, min, or `a / (1 + b²)`.
    fn combine(&mut self, op: usize, a: &LazyBuffer, b: &LazyBuffer) -> LazyBuffer {
        let result = match op {
            0 => a.add(b),
            1 => a.sub(b),
            2 => a.mul(b),
            3 => a.binary(BinaryOp::Max, b),
            4 => a.binary(BinaryOp::Min, b),
            _ => a.div(&self.one_plus_square(b)),
        };
        self.keep(result)
    }
}

/// One step, over the indices of earlier values.
#[derive(Clone, Copy, Debug)]
enum Step {
    Unary(Function, usize),
    Binary(usize, usize, usize),
    /// Two functions of one value combined, `f(x) op g(x)`: one instruction each, even where
    /// `f` and `g` are the same.
    TwoFunctions(usize, Function, Function, usize),
    /// The row maximum (or sum) of a value, broadcast over its row.
    RowStatistic {
        max: bool,
        of: usize,
    },
    /// A value plus its transpose, copied and transposed back.
    PlusTransposedCopy(usize),
}

fn random_steps(rng: &mut StdRng) -> Vec<Step> {
    let mut steps = Vec::new();
    for _ in 0..rng.random_range(3..13) {
        let known = 2 + steps.len();
        let a = rng.random_range(0..known);
        let function = |rng: &mut StdRng| FUNCTIONS[rng.random_range(0..FUNCTIONS.len())];
        let step = match rng.random_range(0..12) {
            0..=3 => Step::Unary(function(rng), a),
            4..=5 => Step::TwoFunctions(rng.random_range(0..6), function(rng), function(rng), a),
            6..=9 => Step::Binary(rng.random_range(0..6), a, rng.random_range(0..known)),
            10 => Step::RowStatistic {
                max: rng.random_bool(0.5),
                of: a,
            },
            _ => Step::PlusTransposedCopy(a),
        };
        // Often an earlier step again: a second node computing the same values.
        let repeat = !steps.is_empty() && rng.random_bool(0.3);
        steps.push(if repeat {
            steps[rng.random_range(0..steps.len())]
        } else {
            step
        });
    }
    steps
}

/// The leaves, then one value per step.
fn build(leaves: &[LazyBuffer], steps: &[Step]) -> (Vec<LazyBuffer>, Nodes) {
    let mut values = leaves.to_vec();
    let mut nodes = Nodes::default();
    for step in steps {
        let value = match *step {
            Step::Unary(f, a) => nodes.function(f, &values[a]),
            Step::Binary(op, a, b) => nodes.combine(op, &values[a], &values[b]),
            Step::TwoFunctions(op, f, g, a) => {
                let (fx, gx) = (nodes.function(f, &values[a]), nodes.function(g, &values[a]));
                nodes.combine(op, &fx, &gx)
            }
            Step::RowStatistic { max, of } => {
                let x = &values[of];
                let statistic = nodes.keep(if max { x.max(&[1]) } else { x.sum(&[1]) });
                statistic.expand(x.shape())
            }
            Step::PlusTransposedCopy(a) => {
                let x = &values[a];
                let copy = nodes.keep(x.permute(&[1, 0]).contiguous());
                nodes.keep(copy.permute(&[1, 0]).add(x))
            }
        };
        values.push(value);
    }
    (values, nodes)
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn graphs_realized_together_equal_their_nodes_realized_one_by_one() {
    let cases: u64 = std::env::var("TEENYGRAD_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(12);
    let (mut compared, mut finite) = (0, 0);
    for seed in 0..cases {
        let mut rng = StdRng::seed_from_u64(seed);
        let leaves: Vec<LazyBuffer> = (0..2)
            .map(|_| LazyBuffer::rand_uniform(&[512, 512], -2.0, 2.0, &mut rng))
            .collect();
        LazyBuffer::realize_all(&leaves.iter().collect::<Vec<_>>());
        let steps = random_steps(&mut rng);
        let last = leaves.len() + steps.len() - 1;
        let mut roots = vec![last];
        for _ in 0..rng.random_range(0..4) {
            roots.push(rng.random_range(leaves.len()..=last));
        }

        let (together, _) = build(&leaves, &steps);
        LazyBuffer::realize_all(&roots.iter().map(|&r| &together[r]).collect::<Vec<_>>());
        let (one_by_one, nodes) = build(&leaves, &steps);
        for node in &nodes.0 {
            node.realize();
        }
        for &r in &roots {
            let (got, want) = (together[r].to_vec(), one_by_one[r].to_vec());
            let differing = got.iter().zip(&want).filter(|&(&g, &w)| !same(g, w)).count();
            assert_eq!(differing, 0, "seed {seed}, value {r} of {steps:?}");
            compared += want.len();
            finite += want.iter().filter(|w| w.is_finite()).count();
        }
    }
    // Infinities and NaN compare equal however they arose: nearly every value must be finite.
    assert!(
        finite * 100 >= compared * 99,
        "{finite} of {compared} values finite"
    );
}
