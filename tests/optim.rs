//! Optimizers against PyTorch's documented update rules (`torch.optim.SGD`, `Adam`, `AdamW`),
//! computed by hand in f64 over several steps with known gradients: the loss
//! `Σ W ⊙ C_t + Σ b ⊙ d_t` has gradient `C_t` for the weight and `d_t` for the bias.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::lazy::stats;
use teenygrad::nn::{Init, Linear, Param, Params};
use teenygrad::optim::{Adam, Optimizer, Sgd, clip_grad_norm};
use teenygrad::prelude::*;

const STEPS: usize = 6;
const EPS: f64 = f32::EPSILON as f64;

type Model = Linear<3, 2>;

fn model() -> Model {
    Model::init(&mut StdRng::seed_from_u64(11))
}

/// The gradient at step `t` (from 1) for parameter element `i` (weight 0..6, bias 6..8): varied
/// in sign and size from step to step so every moment and correction term matters.
fn grad_at(t: usize, i: usize) -> f32 {
    ((1.3 * i as f64 + 0.7 * t as f64).sin() * 2.0 + 0.1 * t as f64) as f32
}

/// One training step: clears gradients, backpropagates the linear loss (the bias only when
/// `bias_grad`), steps.
fn train_step(model: &mut Model, opt: &mut impl Optimizer, t: usize, bias_grad: bool) {
    opt.zero_grad(model);
    backward_at(model, t, bias_grad);
    opt.step(model);
}

/// Backpropagates the linear loss of step `t`: gradient `grad_at(t, i)` on the weight, and on the
/// bias when `bias_grad`.
fn backward_at(model: &Model, t: usize, bias_grad: bool) {
    let c =
        Tensor::<Rank2<2, 3>>::from_vec((0..6).map(|i| grad_at(t, i)).collect(), Default::default()).unwrap();
    let d =
        Tensor::<Rank1<2>>::from_vec((6..8).map(|i| grad_at(t, i)).collect(), Default::default()).unwrap();
    let mut loss = (&model.weight * &c).sum_all();
    if bias_grad {
        loss = &loss + &(model.bias.as_ref().unwrap() * &d).sum_all();
    }
    loss.backward();
}

fn flat(model: &Model) -> Vec<f64> {
    model
        .state_dict()
        .into_iter()
        .flat_map(|(_, _, v)| v)
        .map(f64::from)
        .collect()
}

/// A hand-written reference: updates element `i` of the flat parameters with gradient `g`.
trait Reference {
    fn update(&mut self, i: usize, p: f64, g: f64) -> f64;
}

/// Runs the optimizer and the reference side by side for `STEPS` steps, comparing after each.
///
/// Tolerance: each step rounds a handful of f32 operations (each ≤ u = ε/2 relative), and the
/// result is rounded to f32 at magnitude |p|; errors add over steps. The updates (lr·O(1)) are
/// small next to |p| + 1, so 2ε·t·(1 + |p|) after step t bounds that with room (the largest error
/// seen is under a tenth of it), and it is far below the smallest difference between the variants
/// tested (every rule difference moves a parameter by ≥ ~1e-3 within two steps).
fn check(opt: &mut impl Optimizer, reference: &mut impl Reference, bias_from_step: usize) {
    let mut m = model();
    let mut p = flat(&m);
    for t in 1..=STEPS {
        let bias_grad = t >= bias_from_step;
        train_step(&mut m, opt, t, bias_grad);
        for (i, p) in p.iter_mut().enumerate() {
            if i < 6 || bias_grad {
                *p = reference.update(i, *p, grad_at(t, i) as f64);
            }
        }
        let got = flat(&m);
        for (i, (&g, &w)) in got.iter().zip(&p).enumerate() {
            let tol = 2.0 * EPS * t as f64 * (1.0 + w.abs());
            assert!(
                (g - w).abs() <= tol,
                "step {t}, element {i}: {g} vs reference {w} (tol {tol:e})"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SGD

/// `torch.optim.SGD`:
/// g ← g + λp; b ← g (first) or μb + (1 − τ)g; g ← g + μb (nesterov) or b; p ← p − γg.
struct RefSgd {
    lr: f64,
    momentum: f64,
    dampening: f64,
    nesterov: bool,
    weight_decay: f64,
    buffers: Vec<Option<f64>>,
}

impl RefSgd {
    fn new(lr: f32, momentum: f32, dampening: f32, nesterov: bool, weight_decay: f32) -> Self {
        RefSgd {
            lr: lr as f64,
            momentum: momentum as f64,
            dampening: dampening as f64,
            nesterov,
            weight_decay: weight_decay as f64,
            buffers: vec![None; 8],
        }
    }
}

impl Reference for RefSgd {
    fn update(&mut self, i: usize, p: f64, g: f64) -> f64 {
        let mut g = g + self.weight_decay * p;
        if self.momentum != 0.0 {
            let b = match self.buffers[i] {
                None => g,
                Some(b) => self.momentum * b + (1.0 - self.dampening) * g,
            };
            self.buffers[i] = Some(b);
            g = if self.nesterov { g + self.momentum * b } else { b };
        }
        p - self.lr * g
    }
}

#[test]
fn sgd_plain() {
    check(&mut Sgd::new(0.1), &mut RefSgd::new(0.1, 0.0, 0.0, false, 0.0), 1);
}

#[test]
fn sgd_momentum() {
    check(
        &mut Sgd::new(0.05).momentum(0.9),
        &mut RefSgd::new(0.05, 0.9, 0.0, false, 0.0),
        1,
    );
}

#[test]
fn sgd_momentum_with_dampening() {
    let mut opt = Sgd::new(0.05).momentum(0.9).dampening(0.3);
    check(&mut opt, &mut RefSgd::new(0.05, 0.9, 0.3, false, 0.0), 1);
}

#[test]
fn sgd_nesterov() {
    let mut opt = Sgd::new(0.05).momentum(0.8).nesterov();
    check(&mut opt, &mut RefSgd::new(0.05, 0.8, 0.0, true, 0.0), 1);
    // The builder's order does not matter.
    let mut opt = Sgd::new(0.05).nesterov().momentum(0.8);
    check(&mut opt, &mut RefSgd::new(0.05, 0.8, 0.0, true, 0.0), 1);
}

#[test]
fn sgd_weight_decay() {
    check(
        &mut Sgd::new(0.1).weight_decay(0.2),
        &mut RefSgd::new(0.1, 0.0, 0.0, false, 0.2),
        1,
    );
    let mut opt = Sgd::new(0.05).momentum(0.9).weight_decay(0.2).nesterov();
    check(&mut opt, &mut RefSgd::new(0.05, 0.9, 0.0, true, 0.2), 1);
}

#[test]
#[should_panic(
    expected = "Nesterov momentum requires a momentum and zero dampening (momentum 0.9, dampening 0.1)"
)]
fn sgd_nesterov_with_dampening_is_rejected() {
    let mut opt = Sgd::new(0.1).momentum(0.9).nesterov().dampening(0.1);
    check(&mut opt, &mut RefSgd::new(0.1, 0.9, 0.1, true, 0.0), 1);
}

#[test]
#[should_panic(
    expected = "Nesterov momentum requires a momentum and zero dampening (momentum 0, dampening 0)"
)]
fn sgd_nesterov_without_momentum_is_rejected() {
    let mut opt = Sgd::new(0.1);
    opt.nesterov = true;
    check(&mut opt, &mut RefSgd::new(0.1, 0.0, 0.0, true, 0.0), 1);
}

#[test]
fn settings_pytorch_refuses_panic_before_any_parameter_changes() {
    fn refused(opt: &mut impl Optimizer) -> String {
        let mut layer = Linear::<3, 2>::init(&mut StdRng::seed_from_u64(1));
        layer.forward(Tensor::<Rank1<3>>::ones()).sum_all().backward();
        let before = layer.state_dict();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| opt.step(&mut layer)))
            .expect_err("a setting PyTorch refuses");
        assert_eq!(layer.state_dict(), before, "a parameter changed before the panic");
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }
    let sgd = |f: fn(&mut Sgd)| {
        let mut opt = Sgd::new(0.1).momentum(0.9);
        f(&mut opt);
        refused(&mut opt)
    };
    let adam = |f: fn(&mut Adam)| {
        let mut opt = Adam::new(0.1);
        f(&mut opt);
        refused(&mut opt)
    };
    let cases = [
        (
            sgd(|o| o.lr = -0.1),
            "SGD: lr must be finite and at least 0, got -0.1",
        ),
        (
            sgd(|o| o.lr = f32::NAN),
            "SGD: lr must be finite and at least 0, got NaN",
        ),
        (
            sgd(|o| o.momentum = -0.5),
            "SGD: momentum must be finite and at least 0",
        ),
        (
            sgd(|o| o.weight_decay = f32::INFINITY),
            "SGD: weight_decay must be finite and at least 0",
        ),
        (sgd(|o| o.dampening = f32::NAN), "SGD: dampening must be finite"),
        (adam(|o| o.lr = -1.0), "Adam: lr must be finite and at least 0"),
        (adam(|o| o.eps = -1e-8), "Adam: eps must be finite and at least 0"),
        (
            adam(|o| o.weight_decay = f32::NAN),
            "Adam: weight_decay must be finite and at least 0",
        ),
        (
            adam(|o| o.betas = (1.0, 0.999)),
            "Adam: betas.0 must be in [0, 1), got 1",
        ),
        (
            adam(|o| o.betas = (-0.1, 0.999)),
            "Adam: betas.0 must be in [0, 1)",
        ),
        (adam(|o| o.betas = (0.9, 1.0)), "Adam: betas.1 must be in [0, 1)"),
    ];
    for (message, want) in cases {
        assert!(message.starts_with(want), "{message:?} against {want:?}");
    }
    // The edges PyTorch takes: no learning rate, momentum or decay, betas of 0, eps of 0.
    let mut layer = Linear::<3, 2>::init(&mut StdRng::seed_from_u64(1));
    layer.forward(Tensor::<Rank1<3>>::ones()).sum_all().backward();
    Sgd::new(0.0).step(&mut layer);
    Adam::new(0.0).betas(0.0, 0.0).eps(0.0).step(&mut layer);
}

/// A parameter that gets its first gradient late starts its momentum buffer then (PyTorch keeps
/// state per parameter); a parameter without a gradient is not touched.
#[test]
fn sgd_momentum_state_is_per_parameter() {
    let mut opt = Sgd::new(0.05).momentum(0.9).dampening(0.5);
    check(&mut opt, &mut RefSgd::new(0.05, 0.9, 0.5, false, 0.0), 3);
}

// ---------------------------------------------------------------------------------------------
// Adam and AdamW

/// `torch.optim.Adam` / `AdamW` (no amsgrad), with a step count per parameter:
/// g ← g + λp (Adam) or p ← p(1 − γλ) (AdamW); m ← β₁m + (1 − β₁)g; v ← β₂v + (1 − β₂)g²;
/// p ← p − γ·(m / (1 − β₁ᵗ)) / (√(v / (1 − β₂ᵗ)) + ε).
struct RefAdam {
    lr: f64,
    b1: f64,
    b2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    state: Vec<(f64, f64, i32)>,
}

impl RefAdam {
    fn of(opt: &Adam) -> Self {
        RefAdam {
            lr: opt.lr as f64,
            b1: opt.betas.0 as f64,
            b2: opt.betas.1 as f64,
            eps: opt.eps as f64,
            weight_decay: opt.weight_decay as f64,
            decoupled: opt.decoupled,
            state: vec![(0.0, 0.0, 0); 8],
        }
    }
}

impl Reference for RefAdam {
    fn update(&mut self, i: usize, mut p: f64, mut g: f64) -> f64 {
        if self.decoupled {
            p *= 1.0 - self.lr * self.weight_decay;
        } else {
            g += self.weight_decay * p;
        }
        let (m, v, t) = &mut self.state[i];
        *t += 1;
        *m = self.b1 * *m + (1.0 - self.b1) * g;
        *v = self.b2 * *v + (1.0 - self.b2) * g * g;
        let m_hat = *m / (1.0 - self.b1.powi(*t));
        let v_hat = *v / (1.0 - self.b2.powi(*t));
        p - self.lr * m_hat / (v_hat.sqrt() + self.eps)
    }
}

fn check_adam(mut opt: Adam, bias_from_step: usize) {
    let mut reference = RefAdam::of(&opt);
    check(&mut opt, &mut reference, bias_from_step);
}

#[test]
fn adam_defaults_are_pytorchs() {
    let opt = Adam::new(1e-3);
    assert_eq!(
        (opt.betas, opt.eps, opt.weight_decay, opt.decoupled),
        ((0.9, 0.999), 1e-8, 0.0, false)
    );
    let opt = Adam::adamw(1e-3);
    assert_eq!(
        (opt.betas, opt.eps, opt.weight_decay, opt.decoupled),
        ((0.9, 0.999), 1e-8, 0.01, true)
    );
}

#[test]
fn adam_bias_corrected() {
    check_adam(Adam::new(0.05), 1);
    check_adam(Adam::new(0.02).betas(0.8, 0.99).eps(1e-3), 1);
}

#[test]
fn adam_with_l2_weight_decay() {
    check_adam(Adam::new(0.05).weight_decay(0.3), 1);
}

#[test]
fn adamw_decoupled_weight_decay() {
    check_adam(Adam::adamw(0.05), 1);
    check_adam(Adam::adamw(0.05).weight_decay(0.3).betas(0.85, 0.95), 1);
}

/// With `eps = 0` a step is about `lr` whatever the gradient's scale, so tiny gradients must
/// still move the parameter: their second moments, subnormal, are kept (flushed to 0 they had
/// divided by zero, giving -inf). Three steps of lr 0.1 from 1 reach 0.7 in exact arithmetic;
/// for g = 1e-20, (1 − β₂)·g² ≈ 1e-43 is a subnormal of about 7 bits, so √v̂ is off by up to
/// about 0.5 %, and the three steps of 0.1 by up to about 1.5e-3 together (PyTorch: 0.69931).
/// With the default `eps` the same gradients move nothing an f32 can show.
#[test]
fn adam_without_eps_steps_on_tiny_gradients() {
    for (eps, want, tolerance) in [(0.0, 0.7, 2e-3), (1e-8, 1.0, 0.0)] {
        let mut w = Tensor::from([1.0f32; 3]).requires_grad();
        let mut adam = Adam::new(0.1).eps(eps);
        for _ in 0..3 {
            (w.clone() * Tensor::from([1e-15f32, 1e-19, 1e-20]))
                .sum_all()
                .backward();
            adam.step(&mut w);
            w.zero_grad();
        }
        for got in w.to_vec() {
            assert!((got - want).abs() <= tolerance, "eps {eps}: {got} against {want}");
        }
    }
}

#[test]
fn adam_and_adamw_decay_differently() {
    let (mut a, mut b) = (model(), model());
    let (mut adam, mut adamw) = (
        Adam::new(0.05).weight_decay(0.3),
        Adam::adamw(0.05).weight_decay(0.3),
    );
    for t in 1..=3 {
        train_step(&mut a, &mut adam, t, true);
        train_step(&mut b, &mut adamw, t, true);
    }
    let diff = flat(&a)
        .iter()
        .zip(flat(&b))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(
        diff > 1e-3,
        "L2 and decoupled decay should differ, max diff {diff}"
    );
}

/// PyTorch counts Adam's steps per parameter: a parameter whose first gradient comes at step 3
/// gets the bias corrections of its own step 1 then, not of step 3.
#[test]
fn adam_state_and_step_count_are_per_parameter() {
    check_adam(Adam::new(0.05), 3);
    check_adam(Adam::adamw(0.05).weight_decay(0.1), 4);
}

// ---------------------------------------------------------------------------------------------
// What a step leaves behind

/// A model with no tracked parameter (a detached twin) cannot be trained: the step says so and
/// changes nothing. An untracked parameter beside tracked ones is frozen, as PyTorch leaves a
/// parameter whose `requires_grad` is false; a model without parameters steps as a no-op; a
/// parameter computed from a leaf is refused, as PyTorch refuses a non-leaf.
#[test]
fn untracked_parameters_are_frozen_and_a_wholly_untracked_model_is_refused() {
    let model = model();
    let mut twin = model.detached();
    let before = twin.state_dict();
    let loss = model.forward(Tensor::<Rank2<2, 3>>::ones()).sum_all();
    loss.backward();
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Sgd::new(0.1).step(&mut twin)));
    let message = *refused.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.starts_with("step: no parameter of this model is tracked (the first is `weight`)"),
        "{message}"
    );
    assert!(
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Adam::new(0.1).step(&mut twin))).is_err()
    );
    assert_eq!(twin.state_dict(), before);

    // A hand-built weight without requires_grad beside a tracked bias: only the bias moves.
    let mut rng = StdRng::seed_from_u64(3);
    let w = Tensor::<Rank2<3, 2>>::randn(&mut rng);
    let b = Tensor::<Rank1<2>>::zeros().requires_grad();
    let mut params = (w.clone(), b.clone());
    (Tensor::<Rank2<4, 3>>::ones().matmul(&params.0) + &params.1)
        .sum_all()
        .backward();
    Sgd::new(0.5).step(&mut params);
    assert_eq!(params.0.to_vec(), w.to_vec());
    assert_eq!(params.1.to_vec(), vec![-2.0, -2.0]);

    // No parameters at all: nothing to refuse.
    Sgd::new(0.1).step(&mut teenygrad::nn::Relu);

    // A parameter computed from a leaf keeps no gradient: refused by name, even beside a leaf.
    let scaled = Tensor::<Rank2<3, 2>>::randn(&mut rng).requires_grad() * 0.1;
    let mut params = (scaled, b.clone());
    (Tensor::<Rank2<4, 3>>::ones().matmul(&params.0) + &params.1)
        .sum_all()
        .backward();
    let bias_before = params.1.to_vec();
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Sgd::new(0.1).step(&mut params)));
    let message = *refused.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.starts_with("step: parameter `0` is tracked but not a leaf"),
        "{message}"
    );
    assert_eq!(params.1.to_vec(), bias_before, "nothing changes before the panic");
}

#[test]
fn a_step_realizes_parameters_and_skips_those_without_gradients() {
    for opt in [
        &mut Sgd::new(0.1).momentum(0.9) as &mut dyn StepDyn,
        &mut Adam::new(0.01),
    ] {
        let mut m = model();
        let bias_before = m.bias.as_ref().unwrap().to_vec();
        for t in 1..=3 {
            m.zero_grad();
            let c = Tensor::<Rank2<2, 3>>::full(1.0);
            (&m.weight * &c).sum_all().backward();
            opt.step_dyn(&mut m);
            assert!(
                m.weight.lazy().is_realized(),
                "step {t}: the weight is a realized buffer"
            );
            assert!(m.bias.as_ref().unwrap().lazy().is_realized());
        }
        assert_eq!(
            m.bias.as_ref().unwrap().to_vec(),
            bias_before,
            "no gradient, no change"
        );
        // zero_grad clears the gradient; a step without gradients changes nothing.
        let w = m.weight.to_vec();
        Sgd::new(0.1).zero_grad(&m);
        assert!(m.weight.grad().is_none());
        opt.step_dyn(&mut m);
        assert_eq!(m.weight.to_vec(), w);
    }
}

/// Object-safe stepping for the loop above.
trait StepDyn {
    fn step_dyn(&mut self, model: &mut Model);
}

impl<O: Optimizer> StepDyn for O {
    fn step_dyn(&mut self, model: &mut Model) {
        self.step(model);
    }
}

// ---------------------------------------------------------------------------------------------
// Large parameters, split across threads

const BIG: usize = 1 << 17;
const QUARTER: usize = BIG / 4;

/// One parameter of `BIG` elements: large enough that its update is split across threads.
struct Whole(Tensor<Rank1<BIG>, Tracked>);
/// The same values as four parameters, each too small to split.
struct Quarters([Tensor<Rank1<QUARTER>, Tracked>; 4]);

impl Params for Whole {
    fn visit(&self, _: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        f("w", &self.0);
    }
    fn visit_mut(&mut self, _: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        f("w", &mut self.0);
    }
}

impl Params for Quarters {
    fn visit(&self, _: &str, f: &mut dyn FnMut(&str, &dyn Param)) {
        self.0.iter().for_each(|q| f("q", q));
    }
    fn visit_mut(&mut self, _: &str, f: &mut dyn FnMut(&str, &mut dyn Param)) {
        self.0.iter_mut().for_each(|q| f("q", q));
    }
}

fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + seed * 13) % 97) as f32 / 97.0 - 0.5)
        .collect()
}

/// Each element's update depends on that element alone, so splitting a large parameter's update
/// across threads gives, bit for bit, what updating the same values in small pieces gives.
#[test]
fn large_parameter_updates_split_across_threads_match_small_pieces() {
    let quarter = |v: &[f32], k: usize| {
        Tensor::<Rank1<QUARTER>>::from_vec(v[k * QUARTER..(k + 1) * QUARTER].to_vec(), Default::default())
            .unwrap()
    };
    let run = |opt: &mut dyn FnMut(&mut Whole, &mut Quarters)| {
        let init = values(BIG, 0);
        let mut whole = Whole(
            Tensor::from_vec(init.clone(), Default::default())
                .unwrap()
                .requires_grad(),
        );
        let mut quarters = Quarters(std::array::from_fn(|k| quarter(&init, k).requires_grad()));
        for step in 1..=3 {
            let c = values(BIG, step);
            let full = Tensor::<Rank1<BIG>>::from_vec(c.clone(), Default::default()).unwrap();
            (&whole.0 * &full).sum_all().backward();
            for (k, q) in quarters.0.iter().enumerate() {
                (q * &quarter(&c, k)).sum_all().backward();
            }
            opt(&mut whole, &mut quarters);
            whole.zero_grad();
            quarters.zero_grad();
        }
        let split: Vec<u32> = whole.0.to_vec().iter().map(|v| v.to_bits()).collect();
        let pieces: Vec<u32> = quarters
            .0
            .iter()
            .flat_map(|q| q.to_vec())
            .map(|v| v.to_bits())
            .collect();
        assert!(split == pieces, "the split update differs from the pieces");
    };
    let (mut a, mut b) = (
        Sgd::new(0.1).momentum(0.9).nesterov(),
        Sgd::new(0.1).momentum(0.9).nesterov(),
    );
    run(&mut |w, q| {
        a.step(w);
        b.step(q);
    });
    let (mut a, mut b) = (
        Adam::new(0.01).weight_decay(0.1),
        Adam::new(0.01).weight_decay(0.1),
    );
    stats::reset();
    run(&mut |w, q| {
        a.step(w);
        b.step(q);
    });
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    if threads > 1 && std::env::var("TEENYGRAD_THREADS").is_err() {
        assert!(
            stats::get().parallel_jobs >= 3,
            "the updates were not split: {:?}",
            stats::get()
        );
    }
}

/// State belongs to the model first stepped: a parameter of another length at the same position
/// is a programmer error, reported with its name and both lengths rather than a silently partial
/// update.
#[test]
#[should_panic(expected = "the optimizer holds 6 state values for parameter 0 (`weight`), which has 12")]
fn stepping_another_model_with_the_same_optimizer_panics_with_both_lengths() {
    let mut sgd = Sgd::new(0.1).momentum(0.9);
    let mut small = Linear::<3, 2>::init(&mut StdRng::seed_from_u64(1));
    small.weight.sum_all().backward();
    sgd.step(&mut small);
    let mut large = Linear::<4, 3>::init(&mut StdRng::seed_from_u64(1));
    large.weight.sum_all().backward();
    sgd.step(&mut large);
}

/// The lengths are checked before any parameter changes: a model whose first parameter matches
/// the state and whose second does not is left as it was, by either optimizer.
#[test]
fn a_mismatched_state_panics_before_any_parameter_changes() {
    fn step_twice(opt: &mut impl Optimizer) -> String {
        let mut first = Linear::<3, 2>::init(&mut StdRng::seed_from_u64(1));
        first.forward(Tensor::<Rank1<3>>::ones()).sum_all().backward();
        opt.step(&mut first);
        // Weight [3, 2] has the 6 values of [2, 3]; bias has 3 values, not 2.
        let mut second = Linear::<2, 3>::init(&mut StdRng::seed_from_u64(2));
        second.forward(Tensor::<Rank1<2>>::ones()).sum_all().backward();
        let before = second.state_dict();
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| opt.step(&mut second)))
            .expect_err("the second model's bias has another length");
        assert_eq!(
            second.state_dict(),
            before,
            "a parameter changed before the panic"
        );
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }
    for message in [
        step_twice(&mut Sgd::new(0.1).momentum(0.9)),
        step_twice(&mut Adam::new(0.1)),
    ] {
        assert!(
            message.starts_with("the optimizer holds 2 state values for parameter 1 (`bias`), which has 3"),
            "{message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Gradient clipping

/// The L2 norm, in f64.
fn norm<'a>(values: impl IntoIterator<Item = &'a f32>) -> f64 {
    values
        .into_iter()
        .map(|&g| f64::from(g).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// The model's gradients (weight then bias); `None` for a parameter without one.
fn grads(model: &Model) -> Vec<Option<Vec<f32>>> {
    let mut out = Vec::new();
    model.visit("", &mut |_, p| out.push(p.grad_values()));
    out
}

#[test]
fn clip_grad_norm_scales_all_gradients_by_their_joint_norm() {
    let mut m = model();
    backward_at(&m, 1, true);
    let before: Vec<f32> = grads(&m).into_iter().flatten().flatten().collect();
    assert_eq!(before.len(), 8);
    let total = norm(&before);
    let max_norm = (total / 3.0) as f32;
    let reported = clip_grad_norm(&mut m, max_norm);
    // The norm: f64 squares, rounded once to f32.
    assert_eq!(reported, total as f32);
    // Each gradient times max_norm / (total + 1e-6). In f32 that is four roundings of at most
    // ε/2 relative each (total to f32, the sum, the quotient, the product): 2ε, and a little
    // for second-order terms.
    let scale = f64::from(max_norm) / (total + 1e-6);
    let after: Vec<f32> = grads(&m).into_iter().flatten().flatten().collect();
    for (g, want) in after.iter().zip(before.iter().map(|&g| f64::from(g) * scale)) {
        assert!(
            (f64::from(*g) - want).abs() <= 2.5 * EPS * want.abs(),
            "{g} against {want}"
        );
    }
    // So the clipped gradients' norm is max_norm, shrunk by the 1e-6 (3e-7 relative here).
    let clipped = norm(&after);
    assert!(
        (clipped - total * scale).abs() <= 2.5 * EPS * clipped,
        "{clipped}"
    );
}

#[test]
fn clip_grad_norm_leaves_small_gradients_and_missing_ones_alone() {
    let mut m = model();
    backward_at(&m, 1, false);
    let before = grads(&m);
    assert!(before[1].is_none(), "the bias has no gradient");
    let total = clip_grad_norm(&mut m, 1e6);
    assert_eq!(
        total,
        norm(before[0].as_ref().unwrap()) as f32,
        "the weight's alone"
    );
    assert_eq!(grads(&m), before, "below max_norm nothing changes, bit for bit");
    // Nothing to clip: no gradients at all.
    m.zero_grad();
    assert_eq!(clip_grad_norm(&mut m, 1.0), 0.0);
    assert_eq!(grads(&m), vec![None, None]);
}

#[test]
fn clip_grad_norm_of_non_finite_gradients_follows_pytorch() {
    // Weight gradients `x`, bias gradient 2.
    let run = |x: [f32; 2]| {
        let mut layer = Linear::<2, 1>::init(&mut StdRng::seed_from_u64(0));
        let x = Tensor::from([x]);
        ((&layer.weight * &x).sum_all() + layer.bias.as_ref().unwrap().sum_all() * 2.0).backward();
        let total = clip_grad_norm(&mut layer, 1.0);
        let mut grads = Vec::new();
        layer.visit("", &mut |_, p| grads.extend(p.grad_values().unwrap()));
        (total, grads)
    };
    // An infinite gradient: the norm is infinite, the factor 0, and inf · 0 is NaN.
    let (total, g) = run([f32::INFINITY, 3.0]);
    assert_eq!(total, f32::INFINITY);
    assert!(g[0].is_nan() && g[1] == 0.0 && g[2] == 0.0, "{g:?}");
    // A NaN gradient makes the norm and then every gradient NaN.
    let (total, g) = run([f32::NAN, 3.0]);
    assert!(total.is_nan() && g.iter().all(|v| v.is_nan()), "{total} {g:?}");
}

#[test]
#[should_panic(expected = "clip_grad_norm needs a max_norm of at least 0, got -1")]
fn clip_grad_norm_rejects_a_negative_max_norm() {
    let mut m = model();
    backward_at(&m, 1, true);
    clip_grad_norm(&mut m, -1.0);
}
