//! Command-line flags of the example, parsed by hand (no extra dependency for a dozen flags).

use std::path::PathBuf;

use teenygrad::data::CsvLayout;

pub const USAGE: &str = "\
Train a 64→128→10 ReLU MLP on 8×8 digits and report held-out accuracy beside two baselines.

usage: mlp [--epochs N] [--lr X] [--batch N] [--seed N] [--optimizer sgd|adam]
           [--train FILE.csv --test FILE.csv [--label-last] [--pixel-max X]]
           [--save FILE.safetensors] [--record FILE.json]

  --epochs N         passes over the training set (default 10)
  --lr X             learning rate (default 0.1 for sgd, 0.003 for adam)
  --batch N          samples per step (default 32)
  --seed N           seeds data, initialization and shuffling (default 0)
  --optimizer NAME   sgd (momentum 0.9) or adam (default sgd)
  --train, --test    CSV files (label, then 64 values in [0, 1]) instead of the toy digits
  --label-last       the CSV files' label is the last field (as in UCI's optdigits files)
  --pixel-max X      the CSV files' pixels are in [0, X] (16 for UCI's optdigits; default 1)
  --save FILE        write the trained MLP's parameters (safetensors)
  --record FILE      write config, seed, per-epoch metrics and timings as JSON";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptimizerKind {
    Sgd,
    Adam,
}

#[derive(Clone, Debug)]
pub struct Args {
    pub epochs: usize,
    pub lr: Option<f32>,
    pub batch: usize,
    pub seed: u64,
    pub optimizer: OptimizerKind,
    pub train: Option<PathBuf>,
    pub test: Option<PathBuf>,
    pub layout: CsvLayout,
    pub save: Option<PathBuf>,
    pub record: Option<PathBuf>,
}

impl Args {
    pub fn lr(&self) -> f32 {
        self.lr.unwrap_or(match self.optimizer {
            OptimizerKind::Sgd => 0.1,
            OptimizerKind::Adam => 0.003,
        })
    }
}

/// `Ok(None)` for `--help`; `Err` with a message for anything malformed.
pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut out = Args {
        epochs: 10,
        lr: None,
        batch: 32,
        seed: 0,
        optimizer: OptimizerKind::Sgd,
        train: None,
        test: None,
        layout: CsvLayout::default(),
        save: None,
        record: None,
    };
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--epochs" => out.epochs = number(&flag, &value()?)?,
            "--lr" => {
                let lr: f32 = number(&flag, &value()?)?;
                if !(lr.is_finite() && lr > 0.0) {
                    return Err(format!("--lr must be a positive number, got {lr}"));
                }
                out.lr = Some(lr);
            }
            "--batch" => out.batch = number(&flag, &value()?)?,
            "--seed" => out.seed = number(&flag, &value()?)?,
            "--optimizer" => {
                out.optimizer = match value()?.as_str() {
                    "sgd" => OptimizerKind::Sgd,
                    "adam" => OptimizerKind::Adam,
                    other => return Err(format!("--optimizer must be sgd or adam, got {other:?}")),
                }
            }
            "--train" => out.train = Some(value()?.into()),
            "--test" => out.test = Some(value()?.into()),
            "--label-last" => out.layout = out.layout.label_last(),
            "--pixel-max" => {
                let max: f32 = number(&flag, &value()?)?;
                if !(max.is_finite() && max > 0.0) {
                    return Err(format!("--pixel-max must be a positive number, got {max}"));
                }
                out.layout = out.layout.pixel_max(max);
            }
            "--save" => out.save = Some(value()?.into()),
            "--record" => out.record = Some(value()?.into()),
            _ => return Err(format!("unknown flag {flag:?}")),
        }
    }
    if out.batch == 0 {
        return Err("--batch must be at least 1".into());
    }
    if out.epochs == 0 {
        return Err("--epochs must be at least 1".into());
    }
    if out.train.is_some() != out.test.is_some() {
        return Err("--train and --test go together".into());
    }
    if out.train.is_none() && out.layout != CsvLayout::default() {
        return Err("--label-last and --pixel-max describe the --train and --test files".into());
    }
    Ok(Some(out))
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag} expects a number, got {text:?}"))
}
