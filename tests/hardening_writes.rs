//! A save that fails partway leaves the file it would have replaced whole. The test runs itself
//! again in a child process under a file-size limit (`ulimit -f`, with `SIGXFSZ` ignored so a
//! write past it fails with an error rather than ending the process), where saving a model, an
//! optimizer's state and a dataset larger than the limit over small good files must fail; then
//! it checks each file still has its old bytes, and nothing was left beside them.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::data::{toy_digits_split, write_csv};
use teenygrad::nn::{self, Init, Mlp};
use teenygrad::optim::{self, Sgd};
use teenygrad::prelude::*;

/// Set in the child: the directory whose files it tries to replace.
const CHILD_DIR: &str = "TEENYGRAD_TEST_SAVE_DIR";

fn files(dir: &Path) -> [PathBuf; 3] {
    ["model.safetensors", "state.safetensors", "data.csv"].map(|name| dir.join(name))
}

/// An MLP and SGD with momentum after one step, so the optimizer has state to save.
fn trained<const I: usize, const H: usize, const O: usize>() -> (Mlp<I, H, O>, Sgd) {
    let mut model = Mlp::<I, H, O>::init(&mut StdRng::seed_from_u64(7));
    let mut sgd = Sgd::new(0.1).momentum(0.9);
    model.forward(Tensor::<Rank2<1, I>>::ones()).sum_all().backward();
    sgd.step(&mut model);
    (model, sgd)
}

/// Writes the three files from a small model and dataset, or (`large`) from ones whose files
/// pass 64 KiB.
fn save_all(dir: &Path, large: bool) -> [teenygrad::Result<()>; 3] {
    let [model_path, state_path, data_path] = files(dir);
    fn save<const I: usize, const H: usize, const O: usize>(
        model: &Path,
        state: &Path,
    ) -> [teenygrad::Result<()>; 2] {
        let (model_values, sgd) = trained::<I, H, O>();
        [
            nn::save(&model_values, model),
            optim::save_state(&sgd, &model_values, state),
        ]
    }
    let ([model, state], samples) = if large {
        (save::<64, 256, 10>(&model_path, &state_path), 200)
    } else {
        (save::<2, 3, 2>(&model_path, &state_path), 2)
    };
    [
        model,
        state,
        write_csv(&data_path, &toy_digits_split(1, samples, 0).train),
    ]
}

#[test]
fn a_save_that_fails_partway_leaves_the_old_file_whole() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        for (path, saved) in files(Path::new(&dir)).iter().zip(save_all(Path::new(&dir), true)) {
            assert!(
                matches!(saved, Err(Error::Io { .. })),
                "{}: {saved:?} under the size limit",
                path.display()
            );
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("teenygrad-test-writes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for saved in save_all(&dir, false) {
        saved.unwrap();
    }
    let before = files(&dir).map(|path| std::fs::read(path).unwrap());
    assert!(before.iter().all(|bytes| bytes.len() < 16 << 10));

    let status = Command::new("sh")
        .arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 64 && exec "$0" "$@""#)
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_save_that_fails_partway_leaves_the_old_file_whole",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, &dir)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the child saving under the size limit failed: {status}"
    );

    for (path, old) in files(&dir).iter().zip(&before) {
        assert_eq!(&std::fs::read(path).unwrap(), old, "{} changed", path.display());
    }
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["data.csv", "model.safetensors", "state.safetensors"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
