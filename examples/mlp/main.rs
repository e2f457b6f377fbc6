//! Trains a 64→128→10 ReLU MLP on the seeded toy digits (or CSV files) and reports held-out
//! accuracy beside a majority-class and a linear-softmax baseline.
//!
//! `cargo run --release --example mlp -- --help` lists the flags.

mod args;

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::data::{Batcher, Dataset, Remainder, read_csv_with, toy_digits_split};
use teenygrad::nn::{Detach, Init, Linear, Mlp, Module, Params};
use teenygrad::optim::{Adam, Optimizer, Sgd};
use teenygrad::prelude::*;

use args::{Args, OptimizerKind};

type Features = Const<64>;
type Batch = Tensor<(usize, Features)>;

const TRAIN_SIZE: usize = 8000;
const TEST_SIZE: usize = 2000;

struct EpochStats {
    loss: f64,
    train_accuracy: f64,
    test_accuracy: f64,
    seconds: f64,
}

enum AnyOptimizer {
    Sgd(Sgd),
    Adam(Adam),
}

impl AnyOptimizer {
    fn new(args: &Args) -> Self {
        match args.optimizer {
            OptimizerKind::Sgd => AnyOptimizer::Sgd(Sgd::new(args.lr()).momentum(0.9)),
            OptimizerKind::Adam => AnyOptimizer::Adam(Adam::new(args.lr())),
        }
    }

    fn step<M: Params>(&mut self, model: &mut M) {
        match self {
            AnyOptimizer::Sgd(o) => o.step(model),
            AnyOptimizer::Adam(o) => o.step(model),
        }
    }
}

fn batch_tensor(data: &Dataset, indices: &[usize]) -> (Batch, Labels<usize>) {
    let (images, labels) = data.gather(indices);
    let x = Tensor::from_vec(images, (indices.len(), Const)).expect("gather returns 64 values per sample");
    (x, Labels::from_vec(labels))
}

fn accuracy<M>(model: &M, data: &Dataset) -> f64
where
    M: Module<Batch, Output = Tensor<(usize, Const<10>)>>,
{
    let all: Vec<usize> = (0..data.len()).collect();
    let (x, labels) = batch_tensor(data, &all);
    let predicted = model.forward(x).argmax_rows();
    let correct = predicted
        .iter()
        .zip(labels.indices())
        .filter(|(p, l)| p == l)
        .count();
    correct as f64 / data.len().max(1) as f64
}

/// Trains `model` for `args.epochs` epochs, printing one line per epoch when `label` is given.
fn train<M>(
    model: &mut M,
    train: &Dataset,
    test: &Dataset,
    args: &Args,
    rng: &mut StdRng,
    label: Option<&str>,
) -> Result<Vec<EpochStats>>
where
    M: Module<Batch, Output = Tensor<(usize, Const<10>), Tracked>> + Params + Detach,
    M::Detached: Module<Batch, Output = Tensor<(usize, Const<10>)>>,
{
    let mut optimizer = AnyOptimizer::new(args);
    let mut history = Vec::new();
    let show_progress = label.is_some() && std::io::stderr().is_terminal();
    for epoch in 1..=args.epochs {
        let started = Instant::now();
        let (mut loss_sum, mut seen) = (0.0f64, 0usize);
        let batches = Batcher::new(train.len(), args.batch, Remainder::Keep, rng);
        let steps = batches.len();
        for (step, indices) in batches.enumerate() {
            let (x, labels) = batch_tensor(train, &indices);
            let loss = cross_entropy(&model.forward(x), &labels)?;
            let value = loss.item();
            if !value.is_finite() {
                return Err(Error::Data {
                    location: format!("epoch {epoch}, step {}", step + 1),
                    message: format!("the loss is {value}; lower --lr"),
                });
            }
            loss_sum += value as f64 * indices.len() as f64;
            seen += indices.len();
            loss.backward();
            optimizer.step(model);
            model.zero_grad();
            if show_progress && step % 20 == 0 {
                eprint!(
                    "\r  epoch {epoch}: {}/{steps} steps, loss {:.4}",
                    step + 1,
                    loss_sum / seen as f64
                );
                let _ = std::io::stderr().flush();
            }
        }
        if show_progress {
            eprint!("\r{:60}\r", "");
        }
        let inference = model.detached();
        let stats = EpochStats {
            loss: loss_sum / seen.max(1) as f64,
            train_accuracy: accuracy(&inference, train),
            test_accuracy: accuracy(&inference, test),
            seconds: started.elapsed().as_secs_f64(),
        };
        if let Some(label) = label {
            println!(
                "{label} epoch {epoch:>3}: loss {:.4}  train acc {:>6.2}%  test acc {:>6.2}%  ({:.2} s)",
                stats.loss,
                100.0 * stats.train_accuracy,
                100.0 * stats.test_accuracy,
                stats.seconds
            );
        }
        history.push(stats);
    }
    Ok(history)
}

fn load_data(args: &Args) -> Result<(Dataset, Dataset, String)> {
    match (&args.train, &args.test) {
        (Some(train), Some(test)) => {
            // The library's errors name its API; a user of this program needs its flags.
            let read = |path| {
                read_csv_with(path, args.layout).map_err(|e| match e {
                    Error::Data { location, message } => Error::Data {
                        location,
                        message: message + "\n(other layouts: --label-last, --pixel-max X; see --help)",
                    },
                    other => other,
                })
            };
            let train_set = read(train)?;
            // A label column read as a pixel column and the reverse still parse, but every label
            // is then the same value: one class cannot be learned, and accuracy would say 100 %.
            if let Some(only) = single_class(&train_set) {
                return Err(Error::Data {
                    location: train.display().to_string(),
                    message: format!(
                        "every training label is {only}: is the label column where the layout \
                         says (--label-last)?"
                    ),
                });
            }
            Ok((
                train_set,
                read(test)?,
                format!("{} / {}", train.display(), test.display()),
            ))
        }
        _ => {
            let digits = toy_digits_split(args.seed, TRAIN_SIZE, TEST_SIZE);
            Ok((
                digits.train,
                digits.test,
                format!("toy digits (seed {})", args.seed),
            ))
        }
    }
}

/// The one class every sample has, if they all have the same.
fn single_class(data: &Dataset) -> Option<u8> {
    let first = *data.labels.first()?;
    data.labels.iter().all(|&l| l == first).then_some(first)
}

fn json_record(
    args: &Args,
    source: &str,
    mlp: &[EpochStats],
    linear: &[EpochStats],
    majority: f64,
    seconds: f64,
) -> String {
    let epochs = |h: &[EpochStats]| {
        h.iter()
            .enumerate()
            .map(|(i, e)| {
                format!(
                    "{{\"epoch\": {}, \"loss\": {}, \"train_accuracy\": {}, \"test_accuracy\": {}, \"seconds\": {}}}",
                    i + 1,
                    json_number(e.loss),
                    json_number(e.train_accuracy),
                    json_number(e.test_accuracy),
                    json_number(e.seconds)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"config\": {{\"epochs\": {}, \"lr\": {}, \"batch\": {}, \"optimizer\": \"{}\", \"data\": {}}},\n  \"seed\": {},\n  \"mlp\": [{}],\n  \"linear_baseline\": [{}],\n  \"majority_baseline_accuracy\": {},\n  \"wall_seconds\": {}\n}}\n",
        args.epochs,
        args.lr(),
        args.batch,
        if args.optimizer == OptimizerKind::Sgd {
            "sgd"
        } else {
            "adam"
        },
        json_string(source),
        args.seed,
        epochs(mlp),
        epochs(linear),
        json_number(majority),
        json_number(seconds)
    );
    out
}

/// `text` as a JSON string: quotes, backslashes and control characters escaped.
fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number for JSON, which has no NaN or infinities: those (a diverged loss) are `null`.
fn json_number(x: impl Into<f64>) -> String {
    let x = x.into();
    if x.is_finite() {
        x.to_string()
    } else {
        "null".into()
    }
}

fn run(args: &Args) -> Result<()> {
    let started = Instant::now();
    // Output paths are checked first, so a mistyped directory does not cost a training run.
    for path in [&args.save, &args.record].into_iter().flatten() {
        let dir = (path.parent())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(Error::Io {
                path: path.display().to_string(),
                message: format!("no directory {} to write it in", dir.display()),
            });
        }
    }
    let (train_set, test_set, source) = load_data(args)?;
    let optimizer = match args.optimizer {
        OptimizerKind::Sgd => "Sgd (momentum 0.9)",
        OptimizerKind::Adam => "Adam",
    };
    println!(
        "teenygrad MLP 64→128→10 on {source}: {} train / {} test, {} epochs, batch {}, {optimizer} lr {}",
        train_set.len(),
        test_set.len(),
        args.epochs,
        args.batch,
        args.lr()
    );
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut mlp = Mlp::<64, 128, 10>::init(&mut rng);
    let mlp_history = train(&mut mlp, &train_set, &test_set, args, &mut rng, Some("mlp   "))?;

    let mut linear = Linear::<64, 10>::init(&mut rng);
    let linear_history = train(&mut linear, &train_set, &test_set, args, &mut rng, None)?;
    let majority = train_set.majority_class();
    let majority_accuracy =
        test_set.labels.iter().filter(|&&l| l == majority).count() as f64 / test_set.len().max(1) as f64;
    let seconds = started.elapsed().as_secs_f64();

    let final_acc = |h: &[EpochStats]| h.last().map_or(0.0, |e| 100.0 * e.test_accuracy);
    println!("held-out accuracy:");
    println!("  mlp 64→128→10          {:>6.2}%", final_acc(&mlp_history));
    println!(
        "  linear softmax 64→10   {:>6.2}%  (same optimizer and epochs)",
        final_acc(&linear_history)
    );
    println!(
        "  majority class ({majority})     {:>6.2}%",
        100.0 * majority_accuracy
    );
    println!("seed {}, wall time {seconds:.2} s", args.seed);

    if let Some(path) = &args.save {
        teenygrad::nn::save(&mlp, path)?;
        println!("saved parameters to {}", path.display());
    }
    if let Some(path) = &args.record {
        let json = json_record(
            args,
            &source,
            &mlp_history,
            &linear_history,
            majority_accuracy,
            seconds,
        );
        std::fs::write(path, json).map_err(|e| Error::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        println!("wrote record to {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{args, json_number, json_string, single_class};
    use teenygrad::data::toy_digits_split;

    #[test]
    fn a_single_class_is_found() {
        let mut data = toy_digits_split(0, 30, 0).train;
        assert_eq!(single_class(&data), None);
        data.labels.iter_mut().for_each(|l| *l = 4);
        assert_eq!(single_class(&data), Some(4));
        data.labels[29] = 5;
        assert_eq!(single_class(&data), None);
        data.labels.clear();
        assert_eq!(single_class(&data), None);
    }

    #[test]
    fn json_strings_and_numbers_are_valid_json() {
        assert_eq!(json_string("a\"b\\c"), r#""a\"b\\c""#);
        // Control characters are escaped as JSON spells them; other characters are kept.
        assert_eq!(
            json_string("te\u{1}st\n\u{200b}é"),
            "\"te\\u0001st\\u000a\u{200b}é\""
        );
        assert_eq!(json_number(0.25f32), "0.25");
        assert_eq!(json_number(f64::NAN), "null");
        assert_eq!(json_number(f64::INFINITY), "null");
    }

    #[test]
    fn bad_arguments_are_errors() {
        let parse = |line: &str| args::parse(line.split_whitespace().map(String::from));
        assert!(parse("--epochs 3 --batch 16").unwrap().is_some());
        let uci = parse("--train a --test b --label-last --pixel-max 16")
            .unwrap()
            .unwrap();
        assert_eq!(uci.layout, teenygrad::data::CsvLayout::UCI_OPTDIGITS);
        for bad in [
            "--epochs 0",
            "--batch 0",
            "--lr -1",
            "--train a.csv",
            "--epochs",
            "--bogus 1",
            "--train a --test b --pixel-max 0",
            "--train a --test b --pixel-max nan",
            "--pixel-max 16",
            "--label-last",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
