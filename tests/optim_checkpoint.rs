//! Saving and loading an optimizer's state: a run resumed from a checkpoint (parameters and
//! optimizer state) takes the same steps, bit for bit, as one that never stopped; a bad file is a
//! clear error that changes nothing.

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::nn::{self, Init, Linear, Mlp, Module, Params};
use teenygrad::optim::{self, Adam, Optimizer, Sgd, Stateful};
use teenygrad::prelude::*;

type Model = Mlp<4, 8, 3>;

fn seeded(seed: u64) -> Model {
    Model::init(&mut StdRng::seed_from_u64(seed))
}

/// Step `step`'s batch: five seeded samples, labels 0, 1, 2, 0, 1.
fn batch(step: u64) -> (Tensor<Rank2<5, 4>>, Labels<Const<5>>) {
    let x = Tensor::<Rank2<5, 4>>::rand(&mut StdRng::seed_from_u64(100 + step)) * 4.0 - 2.0;
    (x, Labels::new(vec![0, 1, 2, 0, 1], Const).unwrap())
}

fn train<O: Optimizer>(model: &mut Model, optimizer: &mut O, steps: std::ops::Range<u64>) {
    for step in steps {
        let (x, y) = batch(step);
        cross_entropy(&model.forward(x), &y).unwrap().backward();
        optimizer.step(model);
        model.zero_grad();
    }
}

/// Trains 6 steps, checkpoints, trains 6 more; a fresh model and optimizer loaded from the
/// checkpoint take the same 6 steps to the same bits. Without the optimizer's state they do not.
fn resumes_exactly<O: Optimizer + Stateful>(make: impl Fn() -> O) {
    let (mut model, mut optimizer) = (seeded(1), make());
    train(&mut model, &mut optimizer, 0..6);
    let weights = nn::to_bytes(&model).unwrap();
    let state = optim::state_to_bytes(&optimizer, &model).unwrap();
    train(&mut model, &mut optimizer, 6..12);

    let (mut resumed, mut resumed_optimizer) = (seeded(2), make());
    nn::from_bytes(&mut resumed, &weights).unwrap();
    optim::state_from_bytes(&mut resumed_optimizer, &resumed, &state).unwrap();
    train(&mut resumed, &mut resumed_optimizer, 6..12);
    assert_eq!(resumed.state_dict(), model.state_dict());
    assert_eq!(
        optim::state_to_bytes(&resumed_optimizer, &resumed).unwrap(),
        optim::state_to_bytes(&optimizer, &model).unwrap()
    );

    let (mut restarted, mut fresh) = (seeded(2), make());
    nn::from_bytes(&mut restarted, &weights).unwrap();
    train(&mut restarted, &mut fresh, 6..12);
    assert_ne!(restarted.state_dict(), model.state_dict());
}

#[test]
fn sgd_with_momentum_resumes_exactly() {
    resumes_exactly(|| Sgd::new(0.1).momentum(0.9));
    resumes_exactly(|| Sgd::new(0.1).momentum(0.9).nesterov().weight_decay(0.01));
    resumes_exactly(|| Sgd::new(0.1).momentum(0.5).dampening(0.3));
}

#[test]
fn adam_and_adamw_resume_exactly() {
    resumes_exactly(|| Adam::new(0.01));
    resumes_exactly(|| Adam::adamw(0.01).betas(0.8, 0.99));
}

#[test]
fn plain_sgd_has_no_state_to_save() {
    let (mut model, mut sgd) = (seeded(1), Sgd::new(0.1));
    train(&mut model, &mut sgd, 0..2);
    let state = optim::state_to_bytes(&sgd, &model).unwrap();
    let mut other = Sgd::new(0.1);
    optim::state_from_bytes(&mut other, &model, &state).unwrap();
    assert_eq!(optim::state_to_bytes(&other, &model).unwrap(), state);
}

/// A parameter that has had no gradient has no state in the file, and starts afresh when loaded
/// (Adam counts each parameter's own steps); loading replaces all state the optimizer held.
#[test]
fn a_parameter_without_state_starts_afresh() {
    type Pair = (Linear<4, 3>, Linear<4, 3>);
    let step = |model: &mut Pair, adam: &mut Adam, both: bool, seed: u64| {
        let (x, y) = batch(seed);
        let out = model.0.forward(x.clone());
        let out = if both { out + model.1.forward(x) } else { out };
        cross_entropy(&out, &y).unwrap().backward();
        adam.step(model);
        model.zero_grad();
    };
    let mut model = Pair::init(&mut StdRng::seed_from_u64(3));
    let mut adam = Adam::new(0.01);
    step(&mut model, &mut adam, false, 0);
    step(&mut model, &mut adam, false, 1);
    let weights = nn::to_bytes(&model).unwrap();
    let state = optim::state_to_bytes(&adam, &model).unwrap();
    for seed in 2..5 {
        step(&mut model, &mut adam, true, seed);
    }

    let mut resumed = Pair::init(&mut StdRng::seed_from_u64(4));
    nn::from_bytes(&mut resumed, &weights).unwrap();
    // An optimizer with state of its own for every parameter: all of it is replaced.
    let mut resumed_adam = Adam::new(0.01);
    step(&mut resumed, &mut resumed_adam, true, 9);
    nn::from_bytes(&mut resumed, &weights).unwrap();
    optim::state_from_bytes(&mut resumed_adam, &resumed, &state).unwrap();
    for seed in 2..5 {
        step(&mut resumed, &mut resumed_adam, true, seed);
    }
    assert_eq!(resumed.state_dict(), model.state_dict());
}

/// A parameter held twice (tied weights) has its state saved once and resumes exactly.
#[test]
fn tied_weights_resume_exactly() {
    type Pair = (Linear<3, 3>, Linear<3, 3>);
    let tie = |mut model: Pair| {
        model.1.weight = model.0.weight.clone();
        model
    };
    let run = |model: &mut Pair, adam: &mut Adam, steps: std::ops::Range<u64>| {
        for seed in steps {
            let x = Tensor::<Rank2<2, 3>>::rand(&mut StdRng::seed_from_u64(seed));
            let y = Labels::new(vec![0, 2], Const).unwrap();
            cross_entropy(&model.forward(x), &y).unwrap().backward();
            adam.step(model);
            model.zero_grad();
        }
    };
    let mut model = tie(Pair::init(&mut StdRng::seed_from_u64(5)));
    let mut adam = Adam::new(0.05);
    run(&mut model, &mut adam, 0..3);
    let (weights, state) = (
        nn::to_bytes(&model).unwrap(),
        optim::state_to_bytes(&adam, &model).unwrap(),
    );
    run(&mut model, &mut adam, 3..6);
    let mut resumed = tie(Pair::init(&mut StdRng::seed_from_u64(6)));
    nn::from_bytes(&mut resumed, &weights).unwrap();
    let mut resumed_adam = Adam::new(0.05);
    optim::state_from_bytes(&mut resumed_adam, &resumed, &state).unwrap();
    run(&mut resumed, &mut resumed_adam, 3..6);
    assert_eq!(resumed.state_dict(), model.state_dict());
}

#[test]
fn state_round_trips_through_a_file() {
    let (mut model, mut adam) = (seeded(1), Adam::new(0.01));
    train(&mut model, &mut adam, 0..3);
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("optim-state-{}.safetensors", std::process::id()));
    optim::save_state(&adam, &model, &path).unwrap();
    let mut loaded = Adam::new(0.01);
    optim::load_state(&mut loaded, &model, &path).unwrap();
    assert_eq!(
        optim::state_to_bytes(&loaded, &model).unwrap(),
        optim::state_to_bytes(&adam, &model).unwrap()
    );
    std::fs::remove_file(&path).unwrap();
    let err = optim::load_state(&mut loaded, &model, &path).unwrap_err();
    assert!(
        matches!(&err, Error::Io { path: p, .. } if *p == path.display().to_string()),
        "{err:?}"
    );
}

/// A safetensors file of `F32` tensors (name, dims, values) and metadata, written here by hand.
fn file(metadata: &[(&str, &str)], tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Vec<u8> {
    let meta: Vec<String> = metadata.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    let mut header = vec![format!("\"__metadata__\":{{{}}}", meta.join(","))];
    let mut data: Vec<u8> = Vec::new();
    for (name, dims, values) in tensors {
        let (start, end) = (data.len(), data.len() + 4 * values.len());
        header.push(format!(
            r#"{name:?}:{{"dtype":"F32","shape":{dims:?},"data_offsets":[{start},{end}]}}"#
        ));
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }
    let header = format!("{{{}}}", header.join(","));
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// Adam's state for every parameter of [`Model`], as a file would hold it.
fn adam_tensors() -> Vec<(String, Vec<usize>, Vec<f32>)> {
    let params = [
        ("0.weight", vec![8, 4]),
        ("0.bias", vec![8]),
        ("2.weight", vec![3, 8]),
        ("2.bias", vec![3]),
    ];
    let mut tensors = Vec::new();
    for (name, dims) in params {
        let len = dims.iter().product();
        tensors.push((format!("{name}.exp_avg"), dims.clone(), vec![0.5; len]));
        tensors.push((format!("{name}.exp_avg_sq"), dims, vec![0.25; len]));
    }
    tensors
}

const STEPS: [(&str, &str); 5] = [
    ("optimizer", "Adam"),
    ("0.weight.step", "3"),
    ("0.bias.step", "3"),
    ("2.weight.step", "3"),
    ("2.bias.step", "3"),
];

/// Loading `bytes` into an Adam with state fails at `location` with a message containing
/// `needle`, and leaves the state as it was.
fn assert_rejected(bytes: &[u8], location: &str, needle: &str) {
    let (mut model, mut adam) = (seeded(1), Adam::new(0.01));
    train(&mut model, &mut adam, 0..2);
    let before = optim::state_to_bytes(&adam, &model).unwrap();
    match optim::state_from_bytes(&mut adam, &model, bytes).unwrap_err() {
        Error::Data { location: l, message } => {
            assert_eq!(l, location, "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        other => panic!("expected a Data error, got {other:?}"),
    }
    assert_eq!(optim::state_to_bytes(&adam, &model).unwrap(), before);
}

#[test]
fn a_hand_written_file_loads_with_its_values() {
    let (model, mut adam) = (seeded(1), Adam::new(0.01));
    optim::state_from_bytes(&mut adam, &model, &file(&STEPS, &adam_tensors())).unwrap();
    let bytes = optim::state_to_bytes(&adam, &model).unwrap();
    let mut again = Adam::new(0.01);
    optim::state_from_bytes(&mut again, &model, &bytes).unwrap();
    assert_eq!(optim::state_to_bytes(&again, &model).unwrap(), bytes);
    // The step counts are used: with m = 0.5, v = 0.25 and a zero gradient at step 4,
    // p moves by lr·(β₁·m / (1 − β₁⁴)) / (√(β₂·v / (1 − β₂⁴)) + ε).
    let mut model = model;
    let before = model.0.bias.as_ref().unwrap().to_vec()[0];
    (model.0.bias.as_ref().unwrap().sum_all() * 0.0).backward();
    adam.step(&mut model);
    let (b1, b2) = (0.9f64, 0.999f64);
    let m = b1 * 0.5 / (1.0 - b1.powi(4));
    let v = b2 * 0.25 / (1.0 - b2.powi(4));
    let want = before as f64 - 0.01 * m / (v.sqrt() + 1e-8);
    let got = model.0.bias.as_ref().unwrap().to_vec()[0] as f64;
    assert!((got - want).abs() < 1e-6, "{got} against {want}");
}

#[test]
fn step_counts_written_as_pytorchs_floats_load() {
    // PyTorch keeps Adam's `step` as a float tensor, so `str(state["step"].item())` is "3.0".
    let model = seeded(1);
    let state = |steps: &[(&str, &str)]| {
        let mut adam = Adam::new(0.01);
        optim::state_from_bytes(&mut adam, &model, &file(steps, &adam_tensors())).unwrap();
        optim::state_to_bytes(&adam, &model).unwrap()
    };
    let floats = STEPS.map(|(k, v)| (k, if k.ends_with(".step") { "3.0" } else { v }));
    assert_eq!(state(&floats), state(&STEPS));
}

#[test]
fn bad_files_are_rejected_and_change_nothing() {
    let source = "optimizer state data";
    let at = |name: &str| format!("{source}: tensor {name}");
    let tensors = adam_tensors();
    let without = |name: &str| -> Vec<_> { tensors.iter().filter(|t| t.0 != name).cloned().collect() };

    let sgd = [("optimizer", "SGD")];
    assert_rejected(&file(&sgd, &[]), source, "holds the state of SGD, not of Adam");
    let model_file = nn::to_bytes(&seeded(1)).unwrap();
    assert_rejected(&model_file, source, "holds no optimizer state");
    assert_rejected(
        &file(&STEPS, &without("2.bias.exp_avg_sq")),
        &at("2.bias.exp_avg_sq"),
        "is missing",
    );
    let mut misshapen = tensors.clone();
    misshapen[0].1 = vec![4, 8];
    assert_rejected(
        &file(&STEPS, &misshapen),
        &at("0.weight.exp_avg"),
        "has shape [4, 8]",
    );
    let mut extra = tensors.clone();
    extra.push(("3.weight.exp_avg".into(), vec![1], vec![0.0]));
    assert_rejected(
        &file(&STEPS, &extra),
        &at("3.weight.exp_avg"),
        "is not the state of a parameter",
    );
    let no_step: Vec<_> = STEPS
        .iter()
        .filter(|(k, _)| *k != "0.bias.step")
        .copied()
        .collect();
    assert_rejected(
        &file(&no_step, &tensors),
        &at("0.bias.step"),
        "is missing from the file's metadata",
    );
    for bad in ["0", "-1", "1.5", "x", "4294967296", "0.0", "inf", "NaN", "1e10"] {
        let mut steps = STEPS;
        steps[4].1 = bad;
        assert_rejected(&file(&steps, &tensors), &at("2.bias.step"), "is not a step count");
    }
    // A step count with no moments is state cut short too.
    assert_rejected(
        &file(
            &STEPS,
            &without("2.bias.exp_avg")
                .into_iter()
                .filter(|t| t.0 != "2.bias.exp_avg_sq")
                .collect::<Vec<_>>(),
        ),
        &at("2.bias.exp_avg"),
        "is missing",
    );
    assert_rejected(b"not a file", source, "not a valid safetensors file");
    // A sum of squares below zero, which would make NaN of the next step.
    let mut negative = tensors.clone();
    negative[3].2[5] = -1.0;
    assert_rejected(
        &file(&STEPS, &negative),
        &at("0.bias.exp_avg_sq"),
        "holds -1 at index 5",
    );
    // A step count for no parameter.
    let ghost = [&STEPS[..], &[("ghost.step", "3")]].concat();
    assert_rejected(
        &file(&ghost, &tensors),
        &at("ghost.step"),
        "is not the step count of a parameter",
    );
}

/// Momentum buffers into an SGD without momentum, which would ignore them, are refused.
#[test]
fn momentum_buffers_need_momentum_to_load() {
    let (mut model, mut momentum) = (seeded(1), Sgd::new(0.1).momentum(0.9));
    train(&mut model, &mut momentum, 0..2);
    let state = optim::state_to_bytes(&momentum, &model).unwrap();
    let mut plain = Sgd::new(0.1);
    let err = optim::state_from_bytes(&mut plain, &model, &state).unwrap_err();
    assert!(err.to_string().contains("this SGD has no momentum"), "{err}");
    // Nothing was loaded: a plain SGD still saves no state.
    let empty = optim::state_to_bytes(&Sgd::new(0.1), &model).unwrap();
    assert_eq!(optim::state_to_bytes(&plain, &model).unwrap(), empty);
    optim::state_from_bytes(&mut Sgd::new(0.1).momentum(0.5), &model, &state).unwrap();
    // SGD counts no steps: a step count in its file is refused, not ignored.
    let buffers: Vec<_> = adam_tensors()
        .into_iter()
        .filter_map(|(name, dims, values)| {
            Some((
                name.strip_suffix(".exp_avg")?.to_string() + ".momentum_buffer",
                dims,
                values,
            ))
        })
        .collect();
    let with_step = file(&[("optimizer", "SGD"), ("0.bias.step", "3")], &buffers);
    let err = optim::state_from_bytes(&mut Sgd::new(0.1).momentum(0.9), &model, &with_step).unwrap_err();
    assert!(
        err.to_string()
            .contains("0.bias.step: is in the file's metadata, but this optimizer counts no steps"),
        "{err}"
    );
    optim::state_from_bytes(
        &mut Sgd::new(0.1).momentum(0.9),
        &model,
        &file(&[("optimizer", "SGD")], &buffers),
    )
    .unwrap();
}

/// Saving the state of an optimizer that stepped another model is the misuse `step` panics on.
#[test]
#[should_panic(expected = "state values for parameter 0 (`0.weight`)")]
fn saving_state_for_another_model_panics() {
    let (mut model, mut sgd) = (seeded(1), Sgd::new(0.1).momentum(0.9));
    train(&mut model, &mut sgd, 0..1);
    let other = Mlp::<5, 8, 3>::init(&mut StdRng::seed_from_u64(0));
    let _ = optim::state_to_bytes(&sgd, &other);
}
