//! Shapes whose element count overflows `usize`, and allocations that cannot succeed: every
//! constructor and every shape-changing operation of the typed API answers with an error (its
//! `try_` form) or a panic that names the shape (its plain form) — never undefined behaviour,
//! never an abort.
//!
//! What cannot be tested in-process (an abort ends the whole test binary) runs in a child
//! process: this binary re-runs itself with `TEENYGRAD_HARDENING_CHILD` naming a scenario, and
//! the parent checks how the child ended.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;

use rand::SeedableRng;
use rand::rngs::StdRng;
use teenygrad::Error;
use teenygrad::lazy::LazyBuffer;
use teenygrad::prelude::*;

/// More elements than fit in usize, in two dims that each fit.
const HUGE: usize = 1 << 32;

fn overflow<T: std::fmt::Debug>(result: teenygrad::Result<T>, shape: &[usize]) {
    match result {
        Err(Error::ShapeOverflow { shape: s }) => assert_eq!(s, shape),
        other => panic!("expected ShapeOverflow for {shape:?}, got {other:?}"),
    }
}

/// Runs `f`, expecting a panic whose message contains `needle`.
fn panics_with<T>(f: impl FnOnce() -> T, needle: &str) {
    let payload = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic containing {needle:?}"),
        Err(payload) => payload,
    };
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains(needle),
        "panic message {message:?} lacks {needle:?}"
    );
}

#[test]
fn from_vec_with_an_overflowing_shape_is_an_error() {
    overflow(Tensor::from_vec(vec![], (usize::MAX, 2usize)), &[usize::MAX, 2]);
    overflow(Tensor::from_vec(vec![1.0; 4], (HUGE, HUGE)), &[HUGE, HUGE]);
    overflow(LazyBuffer::from_vec(vec![], &[usize::MAX, 2]), &[usize::MAX, 2]);
    overflow(
        LazyBuffer::from_vec(vec![], &[2, 3, usize::MAX / 4]),
        &[2, 3, usize::MAX / 4],
    );
    // A zero dim makes an empty tensor, but the other dims must still multiply within range,
    // wherever the zero is: so a permutation of a valid shape is valid (`[0, usize::MAX, 2]`
    // had been accepted, and permuted to `[usize::MAX, 2, 0]`, panicked).
    let empty = Tensor::from_vec(vec![], (0usize, usize::MAX)).unwrap();
    assert_eq!((empty.numel(), empty.to_vec()), (0, vec![]));
    let permuted = Tensor::try_zeros_in((usize::MAX, 0usize)).unwrap().t();
    assert_eq!((permuted.numel(), (&permuted + &permuted).to_vec()), (0, vec![]));
    for shape in [[0, usize::MAX, 2], [usize::MAX, 2, 0], [usize::MAX, 0, 2]] {
        overflow(Tensor::try_zeros_in((shape[0], shape[1], shape[2])), &shape);
        overflow(LazyBuffer::from_vec(vec![], &shape), &shape);
    }
}

#[test]
fn constant_constructors_check_the_element_count() {
    let shape = (usize::MAX / 2, 3usize);
    let dims = [usize::MAX / 2, 3];
    overflow(Tensor::try_zeros_in(shape), &dims);
    overflow(Tensor::try_ones_in(shape), &dims);
    overflow(Tensor::try_full_in(shape, 7.0), &dims);
    let message = "has more elements than fit in usize";
    panics_with(
        || Tensor::zeros_in(shape),
        &format!("zeros_in: shape {dims:?} {message}"),
    );
    panics_with(|| Tensor::ones_in(shape), "ones_in: shape");
    panics_with(
        || Tensor::full_in((HUGE, HUGE), 1.0),
        "full_in: shape [4294967296, 4294967296]",
    );
    // A huge shape that fits is fine: one element, broadcast, is stored.
    let big = Tensor::zeros_in((usize::MAX / 2, 2usize));
    assert_eq!(big.numel(), usize::MAX - 1);
    assert_eq!(big.zeros_like().dims(), big.dims());
}

#[test]
fn random_constructors_check_the_count_and_the_allocation() {
    let mut rng = StdRng::seed_from_u64(0);
    let dims = [usize::MAX / 2, 3];
    overflow(Tensor::try_rand_in((dims[0], dims[1]), &mut rng), &dims);
    overflow(Tensor::try_randn_in((dims[0], dims[1]), &mut rng), &dims);
    overflow(
        Tensor::try_uniform_in((dims[0], dims[1]), -1.0, 1.0, &mut rng),
        &dims,
    );
    panics_with(|| Tensor::rand_in((dims[0], dims[1]), &mut rng), "rand_in: shape");
    // 2^60 values (4 EiB) fit in usize but in no address space: an error, not an abort.
    let huge = (1usize << 60,);
    for result in [
        Tensor::try_rand_in(huge, &mut rng).map(|_| ()),
        Tensor::try_randn_in(huge, &mut rng).map(|_| ()),
        Tensor::try_uniform_in(huge, 0.0, 2.0, &mut rng).map(|_| ()),
    ] {
        match result {
            Err(Error::Data { location, message }) => {
                assert_eq!(location, "a tensor of shape [1152921504606846976]");
                assert!(
                    message.contains("4611686018427387904 bytes) cannot be allocated"),
                    "{message}"
                );
            }
            other => panic!("expected an allocation error, got {other:?}"),
        }
    }
    panics_with(|| Tensor::randn_in(huge, &mut rng), "randn_in: a tensor of shape");
    panics_with(
        || Tensor::uniform_in(huge, 0.0, 1.0, &mut rng),
        "cannot be allocated",
    );
}

/// Large random tensors are drawn in chunks (to reserve their memory first); the values are
/// those of one draw in row-major order, as for small ones.
#[test]
fn large_random_tensors_draw_the_same_values_as_one_piece() {
    let n = 200_001; // more than one chunk, and odd: normal samples come in pairs
    let t = Tensor::rand_in((n,), &mut StdRng::seed_from_u64(3));
    let whole = LazyBuffer::rand_uniform(&[n], 0.0, 1.0, &mut StdRng::seed_from_u64(3));
    assert!(
        t.to_vec() == whole.to_vec(),
        "uniform samples differ from one draw"
    );
    let t = Tensor::randn_in((7usize, n), &mut StdRng::seed_from_u64(4));
    let whole = LazyBuffer::rand_normal(&[7, n], 0.0, 1.0, &mut StdRng::seed_from_u64(4));
    assert!(
        t.to_vec() == whole.to_vec(),
        "normal samples differ from one draw"
    );
    // Small shapes are unchanged too.
    let small = Tensor::<Rank2<3, 5>>::randn(&mut StdRng::seed_from_u64(5));
    let whole = LazyBuffer::rand_normal(&[3, 5], 0.0, 1.0, &mut StdRng::seed_from_u64(5));
    assert_eq!(small.to_vec(), whole.to_vec());
}

#[test]
fn operations_whose_result_would_overflow_are_errors() {
    let col = Tensor::zeros_in((HUGE, One));
    let row = Tensor::zeros_in((One, HUGE));
    // Broadcasting two shapes that fit to one that does not.
    overflow(col.try_add(&row), &[HUGE, HUGE]);
    overflow(col.try_maximum(&row), &[HUGE, HUGE]);
    panics_with(|| &col * &row, "shape [4294967296, 4294967296] has more elements");
    panics_with(|| col.lt(&row), "has more elements than fit in usize");
    // Broadcasting, padding and reshaping to such a shape.
    let one = Tensor::from([[1.0]]).reshape::<(One, One)>();
    overflow(one.try_broadcast_to((usize::MAX, 2usize)), &[usize::MAX, 2]);
    panics_with(|| one.broadcast_to((HUGE, HUGE)), "has more elements");
    let pads = [(0, HUGE - 1), (HUGE - 1, 0)];
    overflow(Tensor::from([[1.0]]).pad_to((HUGE, HUGE), &pads), &[HUGE, HUGE]);
    overflow(
        Tensor::from([1.0, 2.0]).try_reshape_to((usize::MAX, 2usize)),
        &[usize::MAX, 2],
    );
    // A matrix product of shapes that fit whose result does not.
    let a = Tensor::zeros_in((HUGE, 1usize));
    let b = Tensor::zeros_in((1usize, HUGE));
    overflow(a.try_matmul(&b), &[HUGE, HUGE]);
    panics_with(|| a.matmul(&b), "has more elements than fit in usize");
    let tracked = a.clone().requires_grad();
    overflow(tracked.try_matmul(&b), &[HUGE, HUGE]);
    // Reading the elements of a valid but empty-axis reduction is fine.
    let empty = Tensor::from_vec(vec![], (0usize, 3usize)).unwrap();
    assert_eq!(empty.sum::<Axis<0>>().to_vec(), vec![0.0; 3]);
}

// ---------------------------------------------------------------------------------------------
// In a child process: what ends a process

const CHILD: &str = "TEENYGRAD_HARDENING_CHILD";

/// The child's side: runs the scenario named by `TEENYGRAD_HARDENING_CHILD`, if any (and nothing
/// in a normal run).
#[test]
fn child_entry() {
    let Ok(name) = std::env::var(CHILD) else {
        return;
    };
    match name.as_str() {
        // 2^60 elements (4 EiB) realized by a kernel.
        "realize-4-EiB" => {
            let t = Tensor::zeros_in((1usize << 60,)).exp().realize();
            println!("realized {:?}", t.dims());
        }
        // 2^60 elements read out.
        "read-4-EiB" => {
            println!("{}", Tensor::zeros_in((1usize << 60,)).to_vec().len());
        }
        // 2^62 elements: more bytes than `isize::MAX`.
        "realize-16-EiB" => {
            let t = Tensor::zeros_in((1usize << 62,)).exp().realize();
            println!("realized {:?}", t.dims());
        }
        // The lazy API below the typed layer: a product whose element count overflows.
        "lazy-matmul-overflow" => {
            let a = LazyBuffer::full(&[HUGE, 1], 0.0);
            let b = LazyBuffer::full(&[1, HUGE], 0.0);
            println!("realized {:?}", a.matmul(&b).realize().shape());
        }
        other => panic!("no scenario {other}"),
    }
}

/// How a child run of `scenario` ended: its exit code, its signal (Unix), its stderr.
fn run_child(scenario: &str) -> (Option<i32>, Option<i32>, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD, scenario)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the test binary again");
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&output.status);
    #[cfg(not(unix))]
    let signal = None;
    (
        output.status.code(),
        signal,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The child ended in an ordinary panic (the test harness's exit code 101) whose message
/// contains `needle` — not an abort, not a signal.
fn assert_clean_panic(scenario: &str, needle: &str) {
    let (code, signal, stderr) = run_child(scenario);
    assert_eq!(
        (code, signal),
        (Some(101), None),
        "{scenario}: the child did not end in a panic; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(needle),
        "{scenario}: stderr lacks {needle:?}:\n{stderr}"
    );
}

#[test]
fn more_bytes_than_isize_max_is_a_panic() {
    assert_clean_panic("realize-16-EiB", "cannot allocate");
}

/// A size that fits in `isize` but not in memory: kernels and `to_vec` reserve with
/// `try_reserve_exact`, so this is a panic naming the size, not a process abort.
#[test]
fn an_allocation_that_cannot_succeed_is_a_panic_not_an_abort() {
    assert_clean_panic("realize-4-EiB", "4611686018427387904");
    assert_clean_panic("read-4-EiB", "4611686018427387904");
}

/// An untyped product whose element count overflows `usize` is refused when it is recorded (it
/// once wrapped to an empty output in release builds, which the unsafe `sgemm` call then wrote
/// past). The typed API's `try_matmul` returns the error instead.
#[test]
fn a_lazy_matmul_whose_result_overflows_is_a_panic() {
    assert_clean_panic("lazy-matmul-overflow", "overflow");
}

/// `LazyBuffer::pad` by sizes that wrap: it shrank the view instead (a review found `[3]`
/// padded by `(usize::MAX, 2)` read as four zeros).
#[test]
fn lazy_pads_that_overflow_panic_naming_the_shape() {
    let x = LazyBuffer::from_vec(vec![1.0, 2.0, 3.0], &[3]).unwrap();
    for pads in [(usize::MAX, 2), (0, usize::MAX), (usize::MAX / 2, usize::MAX / 2)] {
        panics_with(|| x.pad(&[pads]), "around shape [3] overflows usize");
    }
    let m = LazyBuffer::from_vec(vec![0.0; 4], &[2, 2]).unwrap();
    panics_with(
        || m.pad(&[(HUGE, 0), (HUGE, 0)]),
        "around shape [2, 2] overflows usize",
    );
    assert_eq!(x.pad(&[(1, 2)]).to_vec(), [0.0, 1.0, 2.0, 3.0, 0.0, 0.0]);
}
