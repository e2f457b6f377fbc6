//! Random typed graphs with gradients (seeded random cases): values against the f64 reference evaluator,
//! gradients against f64 central finite differences.
//!
//! Each case starts from one to three tracked leaves of small run-time shapes
//! (`Tensor<(usize, usize), Tracked>`, dims 1..=4) and applies 1 to 10 random steps. A step takes a
//! value from the pool of values made so far (so values are reused two or three times, and
//! sometimes meet themselves, as in `x * x`) and applies one typed operation:
//! * smooth unary functions and composites (sin, tanh, exp∘tanh, log(1 + x²), softmax,
//!   log_softmax, gelu, erf, powf, softplus, silu, log1p, expm1, ...), and the kinked ones
//!   (abs, relu, leaky relu, elu);
//! * binary operations with another pool value of the same shape, with a reduced pool value
//!   broadcast back (`(One, n)`, `(m, One)`, `(n,)`, `()`), or with a constant; `where`;
//! * matrix products: matrix×matrix (the right side another pool value, its transpose, a reshape
//!   of one, or a constant), matrix×vector, and batched rank-3 products;
//! * views on views: transpose, reshape, pad, slice, a row or column sliced out and broadcast,
//!   rows selected by index, a join with another pool value along either axis, a stack of
//!   pool values of one shape along a new outer or inner axis,
//!   detours through rank 3 (reshape, any of the six permutations, then a reduction, a reshape
//!   back, a batched Gram matrix or a broadcast), and detours through static shapes
//!   (`Rank2<2, 3>`, `Rank3<2, 2, 3>`, ...: static permutes, pads, slices, softmax, matmuls);
//! * reductions (sum, max, min, mean, var, std, logsumexp over an axis; sum and max over all).
//!
//! The loss is `Σ (value · W).sum_all()` over the last value, the values no step read (most of
//! the time) and one more at random, with constant random weights `W`.
//!
//! Checks, per case:
//! 1. Every pool value and the loss, evaluated by `teenygrad::lazy::reference::evaluate` (in f64,
//!    before anything is realized), against the fused f32 values read afterwards. The order of
//!    realization is random: some values are realized early (together or alone), the output is
//!    read before or after `backward()`.
//! 2. Each leaf's gradient from `backward()` against the f64 finite difference of the loss,
//!    computed by rebuilding the graph from the leaf data with one element moved and running the
//!    reference evaluator: Richardson's combination of central differences at `h` and `h/2`
//!    (`h = 2^-13·max(1, |x|)`; the steps are those actually taken by the f32-rounded inputs). A
//!    leaf that the loss does not reach must get no gradient (or zero) and a zero difference.
//!
//! # Tolerances
//!
//! In units of f32's epsilon `ε`, with `G` the largest magnitude among the case's exact values
//! (at least 1) and `Gg` the largest finite difference of the case:
//! * values: `|fast - exact| <= 100·ε·(|exact| + G·(1 + G))` — f32 rounding, against the
//!   magnitudes that can cancel: sums of products of two values (matmuls, variances). The worst
//!   seen in 100,000 cases was 2.2ε;
//! * gradients: `|backward - fd| <= u + 1000·ε·(|fd| + Gg·(1 + G) + (1 + G)²)`; the worst seen in
//!   100,000 cases was 81ε. The `(1 + G)²` floor covers gradients that are tiny because a function
//!   saturates (`1 - tanh²` in f32 near ±1 has an absolute, not relative, error). `u` is the
//!   difference's own uncertainty: the disagreement of the one-sided differences at `h/2` plus
//!   four times that of the central differences at `h` and `h/2`. Where the loss has a kink
//!   within `h` (relu, abs, max, min) or oscillates faster than `h` resolves (`sin` of a value in
//!   the thousands), these disagree and the allowance widens exactly there; for a smooth loss `u`
//!   is about `h·|f''|`. Elements whose `u` is above 0.1% of the gradient scale are counted as
//!   "near a kink".
//!
//! A case whose values exceed 1e6 (products of products) is skipped and counted: f32 leaves too
//! little precision there for these tolerances.
//!
//! # Running it longer
//!
//! `cargo test` runs 64 cases (well under a second at the test profile). For a long run:
//!
//! ```text
//! TEENYGRAD_CASES=100000 cargo test --release --test hardening_graphs -- --nocapture
//! ```
//!
//! (about 5.5 minutes on a 2-core machine), which prints the number of cases, elements compared
//! and kinked elements at the end. With `HG_DEBUG=1` each build prints its steps (kind, choice
//! seed, result dims) and loss terms, to read a failing case.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

mod support;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use teenygrad::lazy::reference;
use teenygrad::prelude::*;

type S2 = (usize, usize);
type S3 = (usize, usize, usize);
type T2 = Tensor<S2, Tracked>;
type T3 = Tensor<S3, Tracked>;

/// No value grows beyond this many elements (keeps the reference and the differences cheap).
const MAX_NUMEL: usize = 48;
/// No dim grows beyond this.
const MAX_DIM: usize = 8;
/// The number of step kinds (the `u8` of a step is taken modulo this).
const KINDS: u8 = 12;

/// One random case: the leaf shapes, the data seed, the steps and the order of realization.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    leaves: Vec<(usize, usize)>,
    steps: Vec<(u8, u32)>,
    order: u32,
}

fn random_case(rng: &mut StdRng) -> Case {
    Case {
        seed: rng.random(),
        leaves: (0..rng.random_range(1..=3))
            .map(|_| (rng.random_range(1..=4), rng.random_range(1..=4)))
            .collect(),
        steps: (0..rng.random_range(1..=10))
            .map(|_| (rng.random_range(0..KINDS), rng.random()))
            .collect(),
        order: rng.random(),
    }
}

/// The leaf values of a case, uniform in [-1.5, 1.5].
fn leaf_data(case: &Case) -> Vec<Vec<f32>> {
    let mut rng = StdRng::seed_from_u64(case.seed);
    case.leaves
        .iter()
        .map(|&(m, n)| (0..m * n).map(|_| rng.random_range(-1.5f32..1.5)).collect())
        .collect()
}

fn dims2(t: &T2) -> (usize, usize) {
    let s = t.shape();
    (s.0, s.1)
}

/// A stream of choices drawn from a step's parameter.
struct Choices(u64);

impl Choices {
    fn new(param: u32, step: usize) -> Self {
        Choices((u64::from(param) << 8) ^ (step as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
    /// A choice in `0..n`.
    fn pick(&mut self, n: usize) -> usize {
        // splitmix64: every call mixes, so choices drawn from one parameter are independent.
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z % n as u64) as usize
    }
}

fn divisors(n: usize) -> Vec<usize> {
    (1..=n).filter(|&d| n.is_multiple_of(d)).collect()
}

/// Builds the graph of `case` from `data` (one buffer per leaf). Deterministic: the same case and
/// data give the same graph, constants included.
struct Built {
    leaves: Vec<T2>,
    pool: Vec<T2>,
    loss: Tensor<(), Tracked>,
}

struct Builder {
    labels: Option<Vec<String>>,
    consts: StdRng,
    pool: Vec<T2>,
    /// Which pool values a later step has read.
    used: Vec<bool>,
}

impl Builder {
    fn constant<S: Shape>(&mut self, shape: S) -> Tensor<S> {
        let data = (0..shape.numel())
            .map(|_| self.consts.random_range(-1.0f32..1.0))
            .collect();
        Tensor::from_vec(data, shape).unwrap()
    }

    /// A 0/1 mask.
    fn mask(&mut self, shape: S2) -> Tensor<S2> {
        let data = (0..shape.0 * shape.1)
            .map(|_| if self.consts.random_bool(0.5) { 1.0 } else { 0.0 })
            .collect();
        Tensor::from_vec(data, shape).unwrap()
    }

    /// A pool value: often one of the last three, sometimes any.
    fn pick(&mut self, c: &mut Choices) -> T2 {
        let len = self.pool.len();
        let i = if c.pick(2) == 0 {
            len - 1 - c.pick(len.min(3))
        } else {
            c.pick(len)
        };
        self.used[i] = true;
        self.pool[i].clone()
    }

    /// A pool value of dims `want`, if there is one (searching from a random start).
    fn find(&mut self, c: &mut Choices, want: impl Fn((usize, usize)) -> bool) -> Option<T2> {
        let len = self.pool.len();
        let start = c.pick(len);
        let i = (0..len)
            .map(|k| (start + k) % len)
            .find(|&i| want(dims2(&self.pool[i])))?;
        self.used[i] = true;
        Some(self.pool[i].clone())
    }

    fn step(&mut self, kind: u8, c: &mut Choices) -> T2 {
        let x = self.pick(c);
        STEPS.fetch_add(1, Ordering::Relaxed);
        let out = match kind {
            0 | 1 => Some(self.smooth_unary(&x, c)),
            2 => Some(self.kinked(&x, c)),
            3 => Some(self.binary_same(&x, c)),
            4 => Some(self.binary_broadcast(&x, c)),
            5 => self.matmul(&x, c),
            6 => self.movement(&x, c),
            7 => self.rank3(&x, c),
            8 => Some(self.reduce(&x, c)),
            9 => Some(self.select(&x, c)),
            10 => self.static_detour(&x, c),
            _ => self.broadcast_view(&x, c),
        };
        match out {
            Some(y) if y.numel() <= MAX_NUMEL && y.numel() > 0 && dims2(&y).0.max(dims2(&y).1) <= MAX_DIM => {
                y
            }
            // Too big (or not applicable): a cheap smooth op instead.
            _ => {
                FALLBACKS.fetch_add(1, Ordering::Relaxed);
                x.tanh()
            }
        }
    }

    fn smooth_unary(&mut self, x: &T2, c: &mut Choices) -> T2 {
        match c.pick(23) {
            0 => x.sin(),
            1 => x.cos(),
            2 => x.tanh(),
            3 => x.sigmoid(),
            4 => x.neg(),
            5 => x.tanh().exp(),
            6 => (x.square() + 1.0).log(),
            7 => (x.square() + 1.0).sqrt(),
            8 => (x.square() + 1.0).recip(),
            9 => x.square(),
            10 => x.gelu(),
            11 => x * 0.5 + 0.25,
            12 => (x.square() + 0.5).powf(1.5),
            13 => x.log_softmax::<Axis<1>>(),
            14 => x.softmax::<Axis<0>>(),
            15 => x.erf(),
            16 => x.gelu_tanh(),
            17 => 2.0 - x,
            18 => x.softplus(),
            19 => x.silu(),
            20 => x.square().log1p(),
            21 => x.tanh().expm1(),
            _ => 1.0 / (x.square() + 1.0),
        }
    }

    fn kinked(&mut self, x: &T2, c: &mut Choices) -> T2 {
        match c.pick(7) {
            0 => x.abs(),
            1 => x.relu(),
            2 => {
                let k = self.constant(x.shape());
                x.maximum(&k)
            }
            3 => x.minimum(&Tensor::from(0.25)),
            4 => x.leaky_relu(-0.3),
            // With alpha other than 1 its slope jumps at 0.
            5 => x.elu(0.7),
            _ => -x.relu() + x * 0.5,
        }
    }

    fn binary_same(&mut self, x: &T2, c: &mut Choices) -> T2 {
        let shape = x.shape();
        let y = match c.pick(3) {
            0 => x.clone(),
            1 => self
                .find(c, |d| d == (shape.0, shape.1))
                .unwrap_or_else(|| x.clone()),
            _ => self.constant(shape).requires_grad(),
        };
        match c.pick(7) {
            0 => x + &y,
            1 => x - &y,
            2 => x * &y,
            3 => x / &(y.square() + 1.0),
            4 => x.maximum(&y),
            5 => x.minimum(&y),
            _ => (x.square() + 0.5).pow(&(y.tanh() * 0.5)),
        }
    }

    fn binary_broadcast(&mut self, x: &T2, c: &mut Choices) -> T2 {
        let (m, n) = dims2(x);
        let op = c.pick(4);
        let apply = |a: &T2, b: T2| -> T2 {
            match op {
                0 => a + &b,
                1 => &b - a,
                2 => a * &b,
                _ => a / &(b.square() + 1.0),
            }
        };
        // Each operand is broadcast to `(m, n)` through the typed rule.
        let b: T2 = match c.pick(6) {
            0 => match self.find(c, |d| d.1 == n) {
                Some(z) => z.mean_keepdim::<Axis<0>>().broadcast_to((m, n)),
                None => self.constant((One, n)).broadcast_to((m, n)).requires_grad(),
            },
            1 => match self.find(c, |d| d.0 == m) {
                Some(z) => z.sum_keepdim::<Axis<1>>().broadcast_to((m, n)),
                None => self.constant((m, One)).broadcast_to((m, n)).requires_grad(),
            },
            2 => {
                let z = self.pick(c);
                z.mean_all().broadcast_to((m, n))
            }
            3 => match self.find(c, |d| d.1 == n) {
                // A rank-1 value: a missing leading dim broadcasts.
                Some(z) => {
                    let v: Tensor<(usize,), Tracked> = z.max::<Axis<0>>();
                    return match op {
                        0 => x + &v,
                        1 => &v - x,
                        2 => x * &v,
                        _ => x / &(v.square() + 1.0),
                    };
                }
                None => x.clone(),
            },
            4 => {
                // The operator form with a row on the left.
                let row = self.constant((One, n));
                return row.add(x).mul(&x.sigmoid());
            }
            _ => {
                let z = self.pick(c);
                let s = z.sum_all();
                return x * &s.tanh();
            }
        };
        apply(x, b)
    }

    fn matmul(&mut self, x: &T2, c: &mut Choices) -> Option<T2> {
        let (m, n) = dims2(x);
        let choice = c.pick(6);
        let y: T2 = match choice {
            0 => self.find(c, |d| d.0 == n)?,
            1 => self.find(c, |d| d.1 == n)?.t(),
            2 => {
                let z = self.find(c, |d| (d.0 * d.1) % n == 0)?;
                let k = z.numel() / n;
                z.reshape_to((n, k))
            }
            3 => {
                // matrix × vector
                let v = match self.find(c, |d| d.1 == n) {
                    Some(z) => z.sum::<Axis<0>>(),
                    None => self.constant((n,)).requires_grad(),
                };
                let mv: Tensor<(usize,), Tracked> = x.matmul(&v);
                return Some(if c.pick(2) == 0 {
                    mv.reshape_to((m, 1usize))
                } else {
                    mv.reshape_to((1usize, m))
                });
            }
            4 => {
                // (xᵀ·x) or (x·xᵀ): a value against its own transpose.
                return Some(if c.pick(2) == 0 {
                    x.t().matmul(x)
                } else {
                    x.matmul(&x.t())
                });
            }
            _ => {
                let k = 1 + c.pick(4);
                self.constant((n, k)).requires_grad()
            }
        };
        let product = x.matmul(&y);
        Some(if c.pick(3) == 0 {
            // The same product through transposes: (yᵀ xᵀ)ᵀ.
            y.t().matmul(&x.t()).t()
        } else {
            product
        })
    }

    fn movement(&mut self, x: &T2, c: &mut Choices) -> Option<T2> {
        let (m, n) = dims2(x);
        Some(match c.pick(7) {
            5 => {
                // Rows by index, repeated or left out.
                let idx: Vec<usize> = (0..1 + c.pick(4)).map(|_| c.pick(m)).collect();
                x.select_rows(&idx).unwrap()
            }
            6 => match c.pick(3) {
                // Joined with a pool value (perhaps itself) that shares the other dim.
                0 => {
                    let y = self.find(c, |(_, q)| q == n)?;
                    x.cat(&y, Axis::<0>)
                }
                1 => {
                    let y = self.find(c, |(p, _)| p == m)?;
                    y.cat(x, Axis::<1>)
                }
                // Stacked with a pool value of its shape (perhaps itself) along a new axis,
                // outermost or innermost, and made rank 2 again.
                _ => {
                    let y = self.find(c, |d| d == (m, n))?;
                    if c.pick(2) == 0 {
                        Tensor::stack([x, &y], Axis::<0>).reshape_to((2 * m, n))
                    } else {
                        Tensor::stack([&y, x, &y], Axis::<2>).reshape_to((m, 3 * n))
                    }
                }
            },
            0 => {
                if c.pick(2) == 0 {
                    x.t()
                } else {
                    x.permute::<Axes2<1, 0>>()
                }
            }
            1 => {
                let ds = divisors(m * n);
                let a = ds[c.pick(ds.len())];
                // Through a transpose first, sometimes: the reshape of a strided view copies.
                let src = if c.pick(2) == 0 { x.clone() } else { x.t() };
                src.reshape_to((a, m * n / a))
            }
            2 => {
                let pads = [(c.pick(3), c.pick(3)), (c.pick(2), c.pick(3))];
                let dst = (m + pads[0].0 + pads[0].1, n + pads[1].0 + pads[1].1);
                x.pad_to(dst, &pads).unwrap()
            }
            3 => {
                let (h, w) = (1 + c.pick(m), 1 + c.pick(n));
                let starts = [c.pick(m - h + 1), c.pick(n - w + 1)];
                x.slice_to((h, w), &starts).unwrap()
            }
            _ => {
                // Pad, then slice a block that straddles the padding: views on views.
                let pads = [(1 + c.pick(2), c.pick(2)), (c.pick(2), 1 + c.pick(2))];
                let dst = (m + pads[0].0 + pads[0].1, n + pads[1].0 + pads[1].1);
                let padded = x.t().t().pad_to(dst, &pads).unwrap();
                let (h, w) = (1 + c.pick(dst.0), 1 + c.pick(dst.1));
                let starts = [c.pick(dst.0 - h + 1), c.pick(dst.1 - w + 1)];
                padded.slice_to((h, w), &starts).unwrap().t()
            }
        })
    }

    /// A row or a column sliced out, made `One`, and broadcast.
    fn broadcast_view(&mut self, x: &T2, c: &mut Choices) -> Option<T2> {
        let (m, n) = dims2(x);
        let k = 1 + c.pick(4);
        Some(if c.pick(2) == 0 {
            let r = c.pick(m);
            let row = x.slice_to((1usize, n), &[r, 0]).unwrap().reshape_to((One, n));
            row.broadcast_to((k, n))
        } else {
            let col = x
                .slice_to((m, 1usize), &[0, c.pick(n)])
                .unwrap()
                .reshape_to((m, One));
            let wide = col.broadcast_to((m, k));
            wide * &x.sum_keepdim::<Axis<1>>().broadcast_to((m, k)).tanh()
        })
    }

    fn rank3(&mut self, x: &T2, c: &mut Choices) -> Option<T2> {
        let (m, n) = dims2(x);
        let total = m * n;
        let ds = divisors(total);
        let p = ds[c.pick(ds.len())];
        let rest = divisors(total / p);
        let q = rest[c.pick(rest.len())];
        let r = total / p / q;
        let t = x.reshape_to((p, q, r));
        let t = permute3(&t, c.pick(6));
        let (a, b, d) = {
            let s = t.shape();
            (s.0, s.1, s.2)
        };
        Some(match c.pick(6) {
            0 => t.sum::<Axis<0>>(),
            1 => t.max::<Axis<1>>(),
            2 => t.reshape_to((a * b, d)),
            3 => {
                // Batched Gram matrix: t · tᵀ over the last two axes, then summed over the batch.
                let gram: T3 = t.matmul(&t.permute::<Axes3<0, 2, 1>>());
                gram.sum::<Axis<0>>()
            }
            4 => {
                // Batched product with a constant batch, and with a shared matrix.
                let k = 1 + c.pick(3);
                let w = self.constant((a, d, k));
                let y: T3 = t.matmul(&w);
                let shared = self.constant((k, 2usize));
                let z: T3 = y.matmul(&shared);
                z.mean::<Axis<0>>()
            }
            _ => {
                // A new leading axis by broadcasting, then reduced again.
                let k = 1 + c.pick(3);
                let wide: Tensor<(usize, usize, usize, usize), Tracked> = t.broadcast_to((k, a, b, d));
                let scale = self.constant((k, One, One, One));
                (wide * &scale).sum::<Axes2<0, 1>>()
            }
        })
    }

    fn reduce(&mut self, x: &T2, c: &mut Choices) -> T2 {
        let (m, n) = dims2(x);
        match c.pick(13) {
            0 => x.sum_keepdim::<Axis<0>>().reshape_to((1usize, n)),
            1 => {
                let mx = x.max_keepdim::<Axis<1>>();
                x - &mx
            }
            2 => x.min_keepdim::<Axis<0>>().broadcast_to((m, n)) * x,
            3 => x.mean::<Axis<1>>().reshape_to((m, 1usize)),
            4 => x.logsumexp::<Axis<1>>().reshape_to((1usize, m)),
            5 if m >= 2 => x.var::<Axis<0>>().reshape_to((n, 1usize)),
            9 if n >= 2 => x.std::<Axis<1>>().reshape_to((1usize, m)),
            6 => x.sum_all().reshape_to((1usize, 1usize)),
            7 => x.max_all().broadcast_to((m, n)) + x,
            8 => x.sum::<Axis<0>>().reshape_to((n, 1usize)),
            10 => x.var_with_correction::<Axis<1>>(0).reshape_to((m, 1usize)),
            11 => x.std_with_correction::<Axis<0>>(0).reshape_to((1usize, n)),
            _ => x.mean_all().reshape_to((1usize, 1usize)),
        }
    }

    fn select(&mut self, x: &T2, c: &mut Choices) -> T2 {
        let shape = x.shape();
        let cond = self.mask(shape);
        match c.pick(3) {
            0 => x.where_else(&cond, &x.square()),
            1 => {
                let other = self
                    .find(c, |d| d == (shape.0, shape.1))
                    .unwrap_or_else(|| x.neg());
                other.where_else(&cond, x)
            }
            _ => {
                let k = self.constant(shape);
                x.where_else(&cond, &k)
            }
        }
    }

    /// Into a static shape and back, when the element count allows one.
    fn static_detour(&mut self, x: &T2, c: &mut Choices) -> Option<T2> {
        let (m, n) = dims2(x);
        match m * n {
            6 => {
                let s: Tensor<Rank2<2, 3>, Tracked> = x.try_reshape_to(Default::default()).ok()?;
                let w = Tensor::<Rank2<3, 2>>::from([[0.5, -1.0], [0.25, 0.75], [-0.5, 1.0]]);
                let sq: Tensor<Rank2<2, 2>, Tracked> = s.matmul(&w);
                let mixed = sq.matmul(&s);
                let padded: Tensor<Rank2<3, 5>, Tracked> =
                    mixed.softmax::<Axis<1>>().pad(&[(1, 0), (1, 1)]).unwrap();
                // The block at rows 1..3, cols 2..5 reads one column of padding.
                let sliced: Tensor<Rank2<2, 3>, Tracked> = padded.slice(&[1, 2]).unwrap();
                let out = sliced + &s.sum_keepdim::<Axis<0>>() * &s.permute::<Axes2<1, 0>>().t();
                Some(out.reshape_to((m, n)))
            }
            4 => {
                let s: Tensor<Rank2<2, 2>, Tracked> = x.try_reshape_to(Default::default()).ok()?;
                let out = s
                    .matmul(&s.t())
                    .max_keepdim::<Axis<1>>()
                    .broadcast::<Rank2<2, 2>>()
                    - &s;
                Some(out.reshape_to((m, n)))
            }
            8 => {
                let s: Tensor<Rank3<2, 2, 2>, Tracked> = x.try_reshape_to(Default::default()).ok()?;
                let p = s.permute::<Axes3<2, 0, 1>>();
                let out = if c.pick(2) == 0 {
                    p.matmul(&s)
                } else {
                    p.log_softmax::<Axis<2>>()
                };
                Some(out.reshape_to((m, n)))
            }
            12 => {
                let s: Tensor<Rank3<2, 2, 3>, Tracked> = x.try_reshape_to(Default::default()).ok()?;
                let v: Tensor<Rank2<2, 3>, Tracked> = s.sum::<Axis<0>>();
                let flat: Tensor<Rank1<6>, Tracked> = v.flatten::<6>();
                let back3 = flat.reshape::<Rank2<3, 2>>().broadcast::<Rank3<2, 3, 2>>();
                let prod: Tensor<Rank3<2, 2, 2>, Tracked> = s.matmul(&back3);
                let padded = prod
                    .reshape::<Rank2<2, 4>>()
                    .pad::<Rank2<3, 4>>(&[(0, 1), (0, 0)])
                    .ok()?;
                Some(padded.reshape_to((m, n)))
            }
            _ => None,
        }
    }
}

fn permute3(t: &T3, which: usize) -> T3 {
    match which {
        0 => t.permute::<Axes3<0, 1, 2>>(),
        1 => t.permute::<Axes3<0, 2, 1>>(),
        2 => t.permute::<Axes3<1, 0, 2>>(),
        3 => t.permute::<Axes3<1, 2, 0>>(),
        4 => t.permute::<Axes3<2, 0, 1>>(),
        _ => t.permute::<Axes3<2, 1, 0>>(),
    }
}

fn build(case: &Case, data: &[Vec<f32>]) -> Built {
    let leaves: Vec<T2> = case
        .leaves
        .iter()
        .zip(data)
        .map(|(&shape, values)| Tensor::from_vec(values.clone(), shape).unwrap().requires_grad())
        .collect();
    let mut b = Builder {
        labels: std::env::var_os("HG_DEBUG").map(|_| Vec::new()),
        consts: StdRng::seed_from_u64(case.seed ^ 0xc0ff_ee00),
        pool: leaves.clone(),
        used: vec![false; leaves.len()],
    };
    for (i, &(kind, param)) in case.steps.iter().enumerate() {
        let mut c = Choices::new(param, i);
        let y = b.step(kind % KINDS, &mut c);
        if let Some(l) = &mut b.labels {
            l.push(format!(
                "step {i} kind {kind}: {:?} -> pool[{}] {:?}",
                c.0,
                b.pool.len(),
                y.dims()
            ));
        }
        b.pool.push(y);
        b.used.push(false);
    }
    // The loss: the last value, every value no step read (so that most leaves reach the loss),
    // and one more at random, each weighted by constants. Leaving a value out now and then
    // checks that a leaf the loss does not reach gets no gradient.
    let mut c = Choices::new(case.order, 1000);
    let len = b.pool.len();
    let mut terms = vec![len - 1];
    terms.extend((0..len - 1).filter(|&i| !b.used[i] && c.pick(8) != 0));
    terms.push(c.pick(len));
    let mut loss: Option<Tensor<(), Tracked>> = None;
    for &t in &terms {
        let v = b.pool[t].clone();
        let w = b.constant(v.shape());
        let term = (&v * &w).sum_all();
        loss = Some(match loss {
            None => term,
            Some(l) => l + &term,
        });
    }
    if let Some(l) = &b.labels {
        eprintln!("{}\nloss terms {terms:?}", l.join("\n"));
    }
    Built {
        leaves,
        pool: b.pool,
        loss: loss.expect("at least one term"),
    }
}

/// The loss of `case` at `data`, by the f64 reference evaluator (nothing realized).
fn reference_loss(case: &Case, data: &[Vec<f32>]) -> f64 {
    let built = build(case, data);
    reference::evaluate(&built.loss.lazy())[0]
}

/// Every test of this file holds this lock, so the wide-graph test's `nodes_alive()` (a count
/// over the whole process) sees no other test's nodes.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

static CASES: AtomicU64 = AtomicU64::new(0);
static VALUES: AtomicU64 = AtomicU64::new(0);
static GRADS: AtomicU64 = AtomicU64::new(0);
static KINKED: AtomicU64 = AtomicU64::new(0);
static UNREACHED: AtomicU64 = AtomicU64::new(0);
static SKIPPED: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

static WORST_VALUE: AtomicU64 = AtomicU64::new(0);
static WORST_GRAD: AtomicU64 = AtomicU64::new(0);

/// f32's machine epsilon, as the unit of the tolerances.
const EPS: f64 = f32::EPSILON as f64;
/// Values: `|fast - exact| <= VALUE_TOL · EPS · (|exact| + G·(1 + G))`.
const VALUE_TOL: f64 = 100.0;
/// Gradients: `|backward - fd| - uncertainty <= GRAD_TOL · EPS · (|fd| + Gg·(1 + G) + (1 + G)²)`.
const GRAD_TOL: f64 = 1000.0;

/// A finite difference of the loss along one leaf element, and how far it can be trusted.
struct Fd {
    /// Richardson's estimate from central differences at `h` and `h/2`.
    d: f64,
    /// The one-sided differences' disagreement at `h/2` (a kink, or curvature) plus four times
    /// the two central differences' disagreement (higher-order terms, or a kink between `h/2`
    /// and `h`): the difference may be this far from the derivative.
    uncertainty: f64,
}

/// The finite difference of the loss along element `i` of leaf `j`, by the f64 reference.
fn difference(case: &Case, data: &[Vec<f32>], j: usize, i: usize) -> Fd {
    let x = data[j][i];
    let at = |v: f32| {
        let mut moved = data.to_vec();
        moved[j][i] = v;
        reference_loss(case, &moved)
    };
    let h = 2f32.powi(-13) * x.abs().max(1.0);
    // The steps actually taken: the moved inputs are rounded to f32.
    let (xp, xm, xp2, xm2) = (x + h, x - h, x + h / 2.0, x - h / 2.0);
    let (fp, fm, fp2, fm2, f0) = (at(xp), at(xm), at(xp2), at(xm2), at(x));
    let w = |a: f32, b: f32| f64::from(a) - f64::from(b);
    let d1 = (fp - fm) / w(xp, xm);
    let d2 = (fp2 - fm2) / w(xp2, xm2);
    let spread = ((fp2 - f0) / w(xp2, x) - (f0 - fm2) / w(x, xm2)).abs();
    Fd {
        d: (4.0 * d2 - d1) / 3.0,
        uncertainty: spread + 4.0 * (d1 - d2).abs(),
    }
}

fn fail(msg: String) -> Result<(), String> {
    Err(msg)
}

fn check_case(case: &Case) -> Result<(), String> {
    let data = leaf_data(case);
    let built = build(case, &data);

    // 1. References first: a realized node drops its inputs.
    let exact: Vec<Vec<f64>> = built
        .pool
        .iter()
        .map(|t| reference::evaluate(&t.lazy()))
        .collect();
    let exact_loss = reference::evaluate(&built.loss.lazy())[0];
    let g = exact
        .iter()
        .flatten()
        .chain(std::iter::once(&exact_loss))
        .fold(1.0f64, |a, &v| a.max(v.abs()));
    if !g.is_finite() || g > 1e6 {
        // Values this large leave f32 too little precision for the tolerances; rare (products
        // of products), and counted.
        SKIPPED.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    }
    let value_scale = |e: f64| e.abs() + g * (1.0 + g);

    // Realize in a random order.
    let mut c = Choices::new(case.order, 2000);
    let mode = c.pick(4);
    let compare = |i: usize, t: &T2| -> Result<(), String> {
        let fast = t.to_vec();
        if fast.len() != exact[i].len() {
            return fail(format!(
                "value {i}: {} values, reference has {}",
                fast.len(),
                exact[i].len()
            ));
        }
        for (k, (&f, &e)) in fast.iter().zip(&exact[i]).enumerate() {
            let ratio = (f64::from(f) - e).abs() / (EPS * value_scale(e));
            WORST_VALUE.fetch_max(ratio.to_bits(), Ordering::Relaxed);
            if ratio.is_nan() || ratio > VALUE_TOL {
                return fail(format!(
                    "value {i} {:?} element {k}: fused {f}, reference {e} ({ratio:.0} eps of the scale {}, G = {g})",
                    t.dims(),
                    value_scale(e)
                ));
            }
        }
        VALUES.fetch_add(fast.len() as u64, Ordering::Relaxed);
        Ok(())
    };
    let last = built.pool.len() - 1;
    if mode == 2 {
        // Realize some values early, alone or together.
        let chosen: Vec<usize> = (0..built.pool.len()).filter(|_| c.pick(3) == 0).collect();
        if c.pick(2) == 0 {
            for &i in &chosen {
                built.pool[i].lazy().realize();
            }
        } else {
            let bufs: Vec<teenygrad::lazy::LazyBuffer> =
                chosen.iter().map(|&i| built.pool[i].lazy()).collect();
            teenygrad::lazy::LazyBuffer::realize_all(&bufs.iter().collect::<Vec<_>>());
        }
    }
    if mode != 1 {
        compare(last, &built.pool[last])?;
    }
    let fast_loss = f64::from(built.loss.item());
    let ratio = (fast_loss - exact_loss).abs() / (EPS * value_scale(exact_loss));
    WORST_VALUE.fetch_max(ratio.to_bits(), Ordering::Relaxed);
    if ratio.is_nan() || ratio > VALUE_TOL {
        return fail(format!(
            "loss: fused {fast_loss}, reference {exact_loss} ({ratio:.0} eps of the scale)"
        ));
    }
    built.loss.backward();
    for (i, t) in built.pool.iter().enumerate() {
        if mode == 1 || i != last {
            compare(i, t)?;
        }
    }

    // 2. Gradients against central differences of the reference.
    let mut fds: Vec<Vec<Fd>> = Vec::new();
    for (j, values) in data.iter().enumerate() {
        fds.push((0..values.len()).map(|i| difference(case, &data, j, i)).collect());
    }
    let gg = fds.iter().flatten().fold(0.0f64, |a, f| a.max(f.d.abs()));
    let grad_scale = |d: f64| d.abs() + gg * (1.0 + g) + (1.0 + g) * (1.0 + g);
    for (j, leaf) in built.leaves.iter().enumerate() {
        let grad = leaf.grad().map(|t| t.to_vec());
        if grad.is_none() {
            UNREACHED.fetch_add(1, Ordering::Relaxed);
        }
        for (i, fd) in fds[j].iter().enumerate() {
            let auto = grad.as_ref().map_or(0.0, |g| f64::from(g[i]));
            if fd.uncertainty > 1e-3 * (fd.d.abs() + gg) {
                KINKED.fetch_add(1, Ordering::Relaxed);
            }
            let excess = ((auto - fd.d).abs() - fd.uncertainty).max(0.0);
            let ratio = excess / (EPS * grad_scale(fd.d));
            WORST_GRAD.fetch_max(ratio.to_bits(), Ordering::Relaxed);
            if ratio.is_nan() || ratio > GRAD_TOL {
                return fail(format!(
                    "leaf {j} {:?} element {i} (x = {}): backward {auto}, finite difference {} \
                     (uncertainty {}, {ratio:.0} eps of the scale {}, Gg {gg}, G {g}, grad present: {})",
                    case.leaves[j],
                    data[j][i],
                    fd.d,
                    fd.uncertainty,
                    grad_scale(fd.d),
                    grad.is_some()
                ));
            }
            GRADS.fetch_add(1, Ordering::Relaxed);
        }
    }
    CASES.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[test]
fn random_typed_graphs_match_the_reference_and_finite_differences() {
    let _serial = serial();
    let started = std::time::Instant::now();
    support::run_cases(
        "random_typed_graphs_match_the_reference_and_finite_differences",
        64,
        random_case,
        |case| {
            if let Err(e) = check_case(case) {
                panic!("{e}");
            }
        },
    );
    println!(
        "hardening_graphs: {} cases passed in {:.1?}; {} values and {} gradient elements compared, \
         {} elements near a kink, {} leaves the loss did not reach, {} cases skipped (values > 1e6); \
         {} steps built (finite differences rebuild each case's graph), {} fell back to tanh; \
         worst errors {:.1} eps (values) and {:.1} eps (gradients) of their scales",
        CASES.load(Ordering::Relaxed),
        started.elapsed(),
        VALUES.load(Ordering::Relaxed),
        GRADS.load(Ordering::Relaxed),
        KINKED.load(Ordering::Relaxed),
        UNREACHED.load(Ordering::Relaxed),
        SKIPPED.load(Ordering::Relaxed),
        STEPS.load(Ordering::Relaxed),
        FALLBACKS.load(Ordering::Relaxed),
        f64::from_bits(WORST_VALUE.load(Ordering::Relaxed)),
        f64::from_bits(WORST_GRAD.load(Ordering::Relaxed)),
    );
}

/// A case kept from an earlier random run. Not an engine bug: `sin` of values near 8e4 makes the
/// loss oscillate faster than the finite difference's step, so it exercises the difference's
/// uncertainty estimate.
#[test]
fn fast_oscillating_sin_case() {
    let _serial = serial();
    let case = Case {
        seed: 14755452628851481062,
        leaves: vec![(2, 3), (2, 2)],
        steps: vec![
            (10, 262743098),
            (0, 848160364),
            (3, 2517690199),
            (5, 1481588787),
            (0, 3057609649),
            (5, 777525399),
            (0, 3469264820),
            (0, 175403360),
        ],
        order: 112423,
    };
    if let Err(e) = check_case(&case) {
        panic!("{e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Deep and wide graphs

const WIDTH: usize = 10_000;

/// The stack Rust gives a spawned thread by default; set explicitly so that neither the harness
/// nor `RUST_MIN_STACK` can hand the graphs a bigger one.
const DEFAULT_STACK: usize = 2 * 1024 * 1024;

/// 10,000-way fan-in, three ways: 10,000 distinct tracked tensors summed through a chain of adds;
/// one tensor used 10,000 times; and 10,000 branches of one tensor summed as a balanced tree. Each
/// realizes and backpropagates on a 2 MiB stack, with exact values and gradients, and every graph
/// node is freed afterwards.
#[test]
fn ten_thousand_way_fan_in_realizes_backprops_and_frees_its_nodes() {
    let _serial = serial();
    let before = teenygrad::lazy::nodes_alive();
    let worker = std::thread::Builder::new()
        .name("wide-graphs".into())
        .stack_size(DEFAULT_STACK)
        .spawn(|| {
            // 1. Distinct leaves through a chain of adds. Values are small multiples of 1/8, so
            //    every partial sum is exact in f32.
            let value = |i: usize| [(i % 16) as f32 * 0.125, -((i % 7) as f32)];
            let leaves: Vec<Tensor<Rank1<2>, Tracked>> = (0..WIDTH)
                .map(|i| Tensor::from(value(i)).requires_grad())
                .collect();
            let mut sum = leaves[0].clone();
            for leaf in &leaves[1..] {
                sum = sum + leaf;
            }
            let loss = (&sum * &Tensor::from([1.0, 3.0])).sum_all();
            let expected =
                (0..WIDTH).fold([0.0f32; 2], |acc, i| [acc[0] + value(i)[0], acc[1] + value(i)[1]]);
            assert_eq!(sum.to_array(), expected);
            assert_eq!(loss.item(), expected[0] + 3.0 * expected[1]);
            loss.backward();
            for (i, leaf) in leaves.iter().enumerate() {
                assert_eq!(leaf.grad().map(|g| g.to_array()), Some([1.0, 3.0]), "leaf {i}");
            }
            drop((sum, loss, leaves));

            // 2. One tensor used 10,000 times: d/dx (x + x + ... + x) = 10,000, exactly.
            let x = Tensor::from([[0.25, -1.5], [2.0, 0.0]]).requires_grad();
            let mut acc = x.clone();
            for _ in 1..WIDTH {
                acc = acc + &x;
            }
            let loss = acc.sum_all();
            assert_eq!(acc.to_array(), [[2500.0, -15000.0], [20000.0, 0.0]]);
            loss.backward();
            let n = WIDTH as f32;
            assert_eq!(x.grad().unwrap().to_array(), [[n, n], [n, n]]);
            x.zero_grad();
            drop((acc, loss));

            // 3. 10,000 branches of one tensor (x·c_k with c_k in {-1, -0.5, 0, 0.5, 1}),
            //    summed pairwise as a balanced tree: d/dx Σ c_k·x = Σ c_k (exact: small dyadics).
            let c = |k: usize| ((k % 5) as f32 - 2.0) * 0.5 + if k.is_multiple_of(3) { 0.25 } else { 0.0 };
            let mut level: Vec<Tensor<Rank2<2, 2>, Tracked>> = (0..WIDTH).map(|k| &x * c(k)).collect();
            while level.len() > 1 {
                level = level
                    .chunks(2)
                    .map(|pair| match pair {
                        [a, b] => a + b,
                        [a] => a.clone(),
                        _ => unreachable!(),
                    })
                    .collect();
            }
            let tree = level.pop().unwrap();
            let c_sum: f32 = (0..WIDTH).map(c).sum();
            assert_eq!(
                tree.to_array(),
                [[0.25 * c_sum, -1.5 * c_sum], [2.0 * c_sum, 0.0]]
            );
            tree.sum_all().backward();
            assert_eq!(x.grad().unwrap().to_array(), [[c_sum; 2]; 2]);
            drop(tree);
            assert_eq!(c_sum, 833.5);
            x.grad().unwrap().to_array()[0][0]
        })
        .expect("spawn a thread");
    let grad = worker
        .join()
        .expect("the wide graphs ran without overflowing a 2 MiB stack");
    assert_eq!(grad, 833.5);
    assert_eq!(
        teenygrad::lazy::nodes_alive(),
        before,
        "every node the wide graphs made was freed"
    );
}
