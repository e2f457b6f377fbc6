//! Dropout: zeroing random activations while training.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::params::{Param, Params};
use super::{Detach, Init, Module};
use crate::autograd::Var;
use crate::lazy::{BinaryOp, LazyBuffer};
use crate::shape::Shape;
use crate::tensor::{GradMode, Tensor};

/// While training, each value is zeroed with probability `p` and the rest scaled by `1/(1 − p)`,
/// so the expected value is unchanged; in evaluation mode it passes values through. As PyTorch's
/// `nn.Dropout(p)`: a new layer is in training mode, [`Params::eval`] and [`Params::train`]
/// switch it (on a whole model too), and each kept value is `x·s` with `s = 1/(1 − p)`
/// computed as PyTorch computes it (`1 − p` in f64, rounded to f32, then divided into 1), so the
/// same bits. The gradient takes the same mask and scale.
///
/// The layer draws its masks from its own generator, seeded when it is made, so a run is
/// repeatable: [`Init::init`] seeds it from the caller's RNG (and takes PyTorch's default,
/// `p = 0.5`). Two layers made with one seed draw the same masks: give each its own seed, or
/// make them with [`Init::init`] from one generator (as a tuple or an array of layers does).
/// The generator is not saved with the parameters (see [`optim`](crate::optim) on
/// checkpoints). Its [`Detach`] twin, for inference, is in evaluation mode.
///
/// ```
/// use teenygrad::prelude::*;
/// use teenygrad::nn::Dropout;
/// let drop = Dropout::new(0.5, 7);
/// let y = drop.forward(Tensor::<Rank1<1000>>::ones()).to_vec();
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// drop.eval();
/// assert_eq!(drop.forward(Tensor::from([3.0])).to_array(), [3.0]);
/// ```
#[derive(Debug)]
pub struct Dropout {
    p: f64,
    training: AtomicBool,
    rng: Mutex<StdRng>,
}

impl Dropout {
    /// A layer in training mode that drops with probability `p` (an `f64`, as PyTorch's, so
    /// `0.9` is 0.9 and not the `f32` nearest it), drawing its masks from a generator seeded
    /// with `seed`.
    ///
    /// # Panics
    /// If `p` is not in `[0, 1]` (naming it): a setting, not data.
    #[track_caller]
    pub fn new(p: f64, seed: u64) -> Self {
        assert!(
            (0.0..=1.0).contains(&p),
            "Dropout: p = {p} is not a probability in [0, 1]"
        );
        Dropout {
            p,
            training: AtomicBool::new(true),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
        }
    }

    /// The probability of dropping a value.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Whether the layer is in training mode.
    pub fn is_training(&self) -> bool {
        self.training.load(Ordering::Relaxed)
    }

    /// The generator, also after a panic elsewhere while it was held (its state is whole
    /// between draws).
    fn generator(&self) -> std::sync::MutexGuard<'_, StdRng> {
        self.rng.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A mask of `shape`: `1/(1 − p)` where a value is kept, 0 where it is dropped.
    fn mask(&self, shape: &[usize]) -> LazyBuffer {
        let scale = if self.p < 1.0 {
            1.0 / (1.0 - self.p) as f32
        } else {
            0.0
        };
        // A value is kept where `rng.random::<f64>() >= p`. That draw is `(next_u64() >> 11) ·
        // 2⁻⁵³`, and scaling by 2⁵³ is exact, so it is at least `p` exactly when those 53 bits
        // are at least ⌈p·2⁵³⌉. The same `u64`s are drawn in bulk (filling a slice reads the
        // stream in the same order), without a conversion each: a draw at a time, behind the
        // iterator, took most of a 1M-value dropout's time.
        let threshold = (self.p * (1u64 << 53) as f64).ceil() as u64;
        let len = crate::shape::runtime::numel(shape);
        let mut values = Vec::with_capacity(len);
        let mut draws = [0u64; 256];
        let mut rng = self.generator();
        while values.len() < len {
            let draws = &mut draws[..(len - values.len()).min(256)];
            rng.fill(draws);
            values.extend(
                draws
                    .iter()
                    .map(|&u| if u >> 11 >= threshold { scale } else { 0.0 }),
            );
        }
        LazyBuffer::from_vec(values, shape).expect("a mask's values fill its shape")
    }
}

impl Clone for Dropout {
    /// The same settings, mode and generator state: the clone draws the masks the original
    /// would have drawn next.
    fn clone(&self) -> Self {
        let rng = self.generator().clone();
        Dropout {
            p: self.p,
            training: AtomicBool::new(self.is_training()),
            rng: Mutex::new(rng),
        }
    }
}

impl Init for Dropout {
    /// `p = 0.5`, the generator seeded from `rng`.
    fn init<R: Rng + ?Sized>(rng: &mut R) -> Self {
        Dropout::new(0.5, rng.random())
    }
}

#[diagnostic::do_not_recommend]
impl<S: Shape, G: GradMode> Module<Tensor<S, G>> for Dropout {
    type Output = Tensor<S, G>;
    fn forward(&self, x: Tensor<S, G>) -> Tensor<S, G> {
        if !self.is_training() || self.p == 0.0 {
            return x;
        }
        let mask = Var::untracked(self.mask(&x.dims()));
        Tensor::from_var(x.shape(), x.var.binary(BinaryOp::Mul, &mask))
    }
}

impl Params for Dropout {
    fn visit(&self, _: &str, _: &mut dyn FnMut(&str, &dyn Param)) {}
    fn visit_mut(&mut self, _: &str, _: &mut dyn FnMut(&str, &mut dyn Param)) {}
    fn set_training(&self, training: bool) {
        self.training.store(training, Ordering::Relaxed);
    }
}

impl Detach for Dropout {
    type Detached = Dropout;
    /// An evaluation-mode copy (values pass through).
    fn detached(&self) -> Dropout {
        let twin = self.clone();
        twin.eval();
        twin
    }
}
