//! The primitive operations on [`Var`] and their backward rules, in lazy ops. Composite operations
//! (softmax, mean, ...) are built from these and need no rules of their own; cross entropy has
//! one, for speed (see `tensor::composite`).
//!
//! Tie rules: `max`/`min` (binary) give each input half the gradient where they are equal; a max
//! or min reduction splits the gradient evenly among all elements equal to the extreme. `relu` and
//! `abs` have gradient 0 at 0. `pow(a, b)`: the gradient to `a` is 0 where `b = 0` and the gradient
//! to `b` is 0 where `a = 0` and `b ≥ 0` (exact: `a^0 = 1` for all `a`; `0^b = 0` for all `b > 0`).
//! A power by a constant, `powf`, has PyTorch's rule `g·(e·x^(e−1))`, 0 for `e = 0`.

use super::{BackwardFn, Grads, Var};
use crate::lazy::{BinaryOp, LazyBuffer, ReduceOp, UnaryOp};
use crate::shape::runtime::argsort;

/// `1/√(2π)`, the standard normal density at 0.
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

fn full_like(x: &LazyBuffer, value: f32) -> LazyBuffer {
    LazyBuffer::full(x.shape(), value)
}

/// `x^e` for a constant `e`. The exponents 2, 3, -2, 0.5, -0.5 and -1 are computed as PyTorch
/// computes them, `x·x`, `x·x·x`, `1/(x·x)`, `√x`, `1/√x` and `1/x` (a few instructions each,
/// where `Pow` takes about 190 per 16 values), and 1 and 0 as `x` and ones, as PyTorch (and
/// libm) give them; others by `Pow`. The gradient of a square needs `x^1`: by `Pow`, a squared error's
/// backward pass took 12 ms per 1M values instead of 0.8.
pub(crate) fn power(x: &LazyBuffer, e: f32) -> LazyBuffer {
    let square = || x.mul(x);
    match e {
        1.0 => x.clone(),
        0.0 => full_like(x, 1.0),
        2.0 => square(),
        3.0 => square().mul(x),
        -2.0 => square().unary(UnaryOp::Recip),
        0.5 => x.unary(UnaryOp::Sqrt),
        -0.5 => x.unary(UnaryOp::Sqrt).unary(UnaryOp::Recip),
        -1.0 => x.unary(UnaryOp::Recip),
        _ => x.binary(BinaryOp::Pow, &full_like(x, e)),
    }
}

/// `1.0` where `a op b`, else `0.0`.
fn cmp(op: BinaryOp, a: &LazyBuffer, b: &LazyBuffer) -> LazyBuffer {
    a.binary(op, b)
}

impl Var {
    pub(crate) fn unary(&self, op: UnaryOp) -> Var {
        let x = self.buf();
        let y = x.unary(op);
        Var::record(y.clone(), &[self], || {
            let x = x.into_owned();
            Box::new(move |g: &LazyBuffer| {
                let zero = || full_like(&x, 0.0);
                Grads::from([match op {
                    UnaryOp::Neg => g.unary(UnaryOp::Neg),
                    UnaryOp::Exp => g.mul(&y),
                    UnaryOp::Log => g.div(&x),
                    UnaryOp::Sqrt => g.mul(&full_like(&x, 0.5)).div(&y),
                    UnaryOp::Recip => g.mul(&y).mul(&y).unary(UnaryOp::Neg),
                    UnaryOp::Sin => g.mul(&x.unary(UnaryOp::Cos)),
                    UnaryOp::Cos => g.mul(&x.unary(UnaryOp::Sin)).unary(UnaryOp::Neg),
                    UnaryOp::Abs => {
                        let zero = zero();
                        let sign = cmp(BinaryOp::CmpLt, &zero, &x).sub(&cmp(BinaryOp::CmpLt, &x, &zero));
                        g.mul(&sign)
                    }
                    UnaryOp::Tanh => g.mul(&full_like(&x, 1.0).sub(&y.mul(&y))),
                    UnaryOp::Sigmoid => g.mul(&y).mul(&full_like(&x, 1.0).sub(&y)),
                    // PyTorch's `where(y <= 0, 0, g)`: +0 where the unit is off, even for an
                    // infinite or NaN `g` (a product by the mask made those NaN, and `-g·0` a
                    // -0), and `g` where `x` is NaN (so is `y`). From the output (y > 0 exactly
                    // where x > 0), so the pre-activation is read only by the forward relu and
                    // can fuse into it; one zero for both, so the kernel reads one leaf.
                    UnaryOp::Relu => {
                        let zero = zero();
                        cmp(BinaryOp::CmpLe, &y, &zero).where_(&zero, g)
                    }
                    // Φ(x) + x·φ(x), with the density φ(x) = e^(-x²/2)/√(2π).
                    UnaryOp::Gelu => {
                        let c = |v: f32| full_like(&x, v);
                        let cdf = (x.mul(&c(std::f32::consts::FRAC_1_SQRT_2)).unary(UnaryOp::Erf))
                            .mul(&c(0.5))
                            .add(&c(0.5));
                        let density = (x.mul(&x).mul(&c(-0.5)).unary(UnaryOp::Exp)).mul(&c(FRAC_1_SQRT_2PI));
                        g.mul(&cdf.add(&x.mul(&density)))
                    }
                    // (2/√π)·e^(-x²)
                    UnaryOp::Erf => {
                        let gaussian = x.mul(&x).unary(UnaryOp::Neg).unary(UnaryOp::Exp);
                        g.mul(&gaussian.mul(&full_like(&x, std::f32::consts::FRAC_2_SQRT_PI)))
                    }
                }])
            }) as BackwardFn
        })
    }

    /// `self^e` for a constant `e` (see [`power`]), with PyTorch's gradient `g·(e·x^(e−1))`, the
    /// power again by [`power`], and 0 for `e = 0`. Through the formulas' own rules instead, a
    /// zero or infinite `x` met `∞·0` (`powf(-2.0)`'s gradient at 0 was NaN, not -∞).
    pub(crate) fn powf(&self, e: f32) -> Var {
        let x = self.buf();
        Var::record(power(&x, e), &[self], || {
            let x = x.into_owned();
            Box::new(move |g: &LazyBuffer| {
                if e == 0.0 {
                    return [full_like(&x, 0.0)].into();
                }
                [g.mul(&full_like(&x, e).mul(&power(&x, e - 1.0)))].into()
            }) as BackwardFn
        })
    }

    pub(crate) fn binary(&self, op: BinaryOp, other: &Var) -> Var {
        let (a, b) = (self.buf(), other.buf());
        let y = a.binary(op, &b);
        Var::record(y.clone(), &[self, other], || {
            let (a, b) = (a.into_owned(), b.into_owned());
            Box::new(move |g: &LazyBuffer| match op {
                BinaryOp::Add => Grads::from([g.clone(), g.clone()]),
                BinaryOp::Sub => Grads::from([g.clone(), g.unary(UnaryOp::Neg)]),
                BinaryOp::Mul => Grads::from([g.mul(&b), g.mul(&a)]),
                BinaryOp::Div => Grads::from([g.div(&b), g.mul(&y).div(&b).unary(UnaryOp::Neg)]),
                BinaryOp::Max | BinaryOp::Min => {
                    // a wins where b < a (max) or a < b (min); ties share the gradient. Picked,
                    // not multiplied by a 0-or-1 mask: the side that loses gets +0 even where
                    // `g` is infinite, NaN or negative, as in PyTorch (a product gave NaN, -0).
                    let lt = |p: &LazyBuffer, q: &LazyBuffer| cmp(BinaryOp::CmpLt, p, q);
                    let (a_wins, b_wins) = if op == BinaryOp::Max {
                        (lt(&b, &a), lt(&a, &b))
                    } else {
                        (lt(&a, &b), lt(&b, &a))
                    };
                    let zero = full_like(&a, 0.0);
                    let tie = cmp(BinaryOp::CmpEq, &a, &b).where_(&g.mul(&full_like(&a, 0.5)), &zero);
                    Grads::from([a_wins.where_(g, &tie), b_wins.where_(g, &tie)])
                }
                BinaryOp::Pow => {
                    // a^0 = 1 for every a, so d/da is 0 where b = 0 (the formula gives 0·∞ = NaN
                    // at a = 0). At a = 0 with b ≥ 0, d/db is taken as 0 as in PyTorch (0^b is 0,
                    // or 1 at b = 0, where y·ln a is NaN or -∞); with b < 0 it is y·ln a, ±∞.
                    let (zero, one) = (full_like(&a, 0.0), full_like(&a, 1.0));
                    let da = b.mul(&a.binary(BinaryOp::Pow, &b.sub(&one)));
                    let da = cmp(BinaryOp::CmpEq, &b, &zero).where_(&zero, &da);
                    let db = y.mul(&a.unary(UnaryOp::Log));
                    let at_zero = cmp(BinaryOp::CmpEq, &a, &zero).mul(&cmp(BinaryOp::CmpLe, &zero, &b));
                    let db = at_zero.where_(&zero, &db);
                    Grads::from([g.mul(&da), g.mul(&db)])
                }
                BinaryOp::CmpLt | BinaryOp::CmpLe | BinaryOp::CmpEq => {
                    Grads::from([full_like(&a, 0.0), full_like(&b, 0.0)])
                }
            }) as BackwardFn
        })
    }

    /// `cond != 0 ? a : b`; `cond` gets no gradient.
    pub(crate) fn where_(cond: &Var, a: &Var, b: &Var) -> Var {
        let c = cond.buf();
        let y = c.where_(&a.buf(), &b.buf());
        Var::record(y, &[cond, a, b], || {
            let c = c.into_owned();
            Box::new(move |g: &LazyBuffer| {
                let zero = full_like(g, 0.0);
                Grads::from([zero.clone(), c.where_(g, &zero), c.where_(&zero, g)])
            }) as BackwardFn
        })
    }

    /// Reduces `axes` to size 1 (rank kept).
    pub(crate) fn reduce(&self, op: ReduceOp, axes: &[usize]) -> Var {
        let x = self.buf();
        let y = x.reduce(op, axes);
        Var::record(y.clone(), &[self], || {
            let (x, axes) = (x.into_owned(), axes.to_vec());
            Box::new(move |g: &LazyBuffer| {
                let shape = x.shape();
                Grads::from([match op {
                    ReduceOp::Sum => g.expand(shape),
                    ReduceOp::Max | ReduceOp::Min => {
                        let is_extreme = cmp(BinaryOp::CmpEq, &x, &y.expand(shape));
                        let count = is_extreme.sum(&axes);
                        is_extreme.mul(&g.div(&count).expand(shape))
                    }
                }])
            }) as BackwardFn
        })
    }

    pub(crate) fn reshape(&self, shape: &[usize]) -> Var {
        let x = self.buf();
        Var::record(x.reshape(shape), &[self], || {
            let original = x.shape().to_vec();
            Box::new(move |g: &LazyBuffer| Grads::from([g.reshape(&original)])) as BackwardFn
        })
    }

    pub(crate) fn permute(&self, order: &[usize]) -> Var {
        Var::record(self.buf().permute(order), &[self], || {
            let inverse = argsort(order);
            Box::new(move |g: &LazyBuffer| Grads::from([g.permute(&inverse)])) as BackwardFn
        })
    }

    /// Broadcasts to `shape` (numpy rule); the backward sums over the expanded axes.
    pub(crate) fn expand(&self, shape: &[usize]) -> Var {
        let x = self.buf();
        if x.shape() == shape {
            return self.clone();
        }
        Var::record(x.expand(shape), &[self], || {
            let original = x.shape().to_vec();
            Box::new(move |g: &LazyBuffer| Grads::from([sum_to(g, &original)])) as BackwardFn
        })
    }

    pub(crate) fn pad(&self, pads: &[(usize, usize)]) -> Var {
        let x = self.buf();
        Var::record(x.pad(pads), &[self], || {
            let ranges: Vec<(usize, usize)> = pads
                .iter()
                .zip(x.shape())
                .map(|(&(before, _), &d)| (before, before + d))
                .collect();
            Box::new(move |g: &LazyBuffer| Grads::from([g.shrink(&ranges)])) as BackwardFn
        })
    }

    pub(crate) fn shrink(&self, ranges: &[(usize, usize)]) -> Var {
        let x = self.buf();
        Var::record(x.shrink(ranges), &[self], || {
            let pads: Vec<(usize, usize)> = ranges
                .iter()
                .zip(x.shape())
                .map(|(&(start, end), &d)| (start, d - end))
                .collect();
            Box::new(move |g: &LazyBuffer| Grads::from([g.pad(&pads)])) as BackwardFn
        })
    }

    /// `[.., m, k] x [.., k, n]`, equal batch axes.
    pub(crate) fn matmul(&self, other: &Var) -> Var {
        let (a, b) = (self.buf(), other.buf());
        Var::record(a.matmul(&b), &[self, other], || {
            let (a, b) = (a.into_owned(), b.into_owned());
            Box::new(move |g: &LazyBuffer| {
                Grads::from([g.matmul(&transpose_last(&b)), transpose_last(&a).matmul(g)])
            }) as BackwardFn
        })
    }
}

/// Swaps the last two axes (a free view).
pub(crate) fn transpose_last(x: &LazyBuffer) -> LazyBuffer {
    let rank = x.shape().len();
    let mut order: Vec<usize> = (0..rank).collect();
    order.swap(rank - 2, rank - 1);
    x.permute(&order)
}

/// Reverses a broadcast: sums `g` over the axes that were expanded to reach its shape from
/// `shape` (including missing leading axes).
pub(crate) fn sum_to(g: &LazyBuffer, shape: &[usize]) -> LazyBuffer {
    let lead = g.shape().len() - shape.len();
    let axes: Vec<usize> = (0..g.shape().len())
        .filter(|&d| d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1))
        .collect();
    let summed = if axes.is_empty() { g.clone() } else { g.sum(&axes) };
    summed.reshape(shape)
}
