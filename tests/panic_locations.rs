//! A panicking method (run-time dims that disagree, an invalid optimizer, clipping or loss
//! setting, a second backward through a graph, an optimizer stepping another model or one with
//! no tracked parameter, a batch
//! size of 0, a sample, digit or embedding index out of range) reports the caller's line, not
//! a line inside the library: that line is where the bug is. One test, since the panic hook it
//! sets is global to the process.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use rand::SeedableRng;
use teenygrad::data::{Batcher, Dataset, Remainder, render_digit};
use teenygrad::nn::{Embedding, Linear};
use teenygrad::optim::clip_grad_norm as clip;
use teenygrad::prelude::*;
use teenygrad::tensor::mse;

static LAST: Mutex<Option<(String, u32, String)>> = Mutex::new(None);

/// Runs `f`, which must panic, and returns the file and line the panic reported, and its message.
fn panic_site(f: impl FnOnce()) -> (String, u32, String) {
    *LAST.lock().unwrap() = None;
    assert!(panic::catch_unwind(AssertUnwindSafe(f)).is_err(), "it panicked");
    LAST.lock().unwrap().take().expect("the hook saw the panic")
}

type Rows = Tensor<(usize, Const<4>)>;
/// The start of the panic's message (the method's name), the line calling it, and the call.
type Case<'a> = (&'static str, u32, Box<dyn FnOnce() + 'a>);

#[test]
fn panics_report_the_callers_line() {
    panic::set_hook(Box::new(|info| {
        let location = info.location().expect("a location");
        let payload = info.payload();
        let message = (payload.downcast_ref::<String>().cloned())
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        *LAST.lock().unwrap() = Some((location.file().to_string(), location.line(), message));
    }));
    let a: Rows = Tensor::zeros_in((3usize, Const::<4>));
    let b: Rows = Tensor::ones_in((5usize, Const::<4>));
    let w = Tensor::<(Const<3>, usize)>::zeros_in((Const::<3>, 4usize));
    let m = Tensor::<(usize, Const<2>)>::zeros_in((5usize, Const::<2>));
    let (five, huge) = ((5usize, Const::<4>), (usize::MAX, Const::<4>));
    let mut layer = Linear::<4, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(0));
    let mut opt = Sgd::new(0.1);
    opt.nesterov = true;
    // A graph already backpropagated, and optimizers that stepped a model of other lengths.
    let used = layer.forward(Tensor::<Rank1<4>>::ones()).sum_all();
    used.backward();
    let [mut wide, mut wide2] = [1, 2].map(|seed| {
        let wide = Linear::<5, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(seed));
        wide.weight.sum_all().backward();
        wide
    });
    let (mut sgd, mut adam) = (Sgd::new(0.1).momentum(0.9), Adam::new(0.1));
    let mut lin = Linear::<4, 2>::init(&mut rand::rngs::StdRng::seed_from_u64(3));
    let seeded = |seed| rand::rngs::StdRng::seed_from_u64(seed);
    let (r, r2, keep) = (&mut seeded(4), &mut seeded(5), Remainder::Keep);
    let data = Dataset {
        images: vec![[0.0; teenygrad::data::FEATURES]],
        labels: vec![1],
    };
    let bad = Dataset {
        images: vec![[0.0; teenygrad::data::FEATURES]],
        labels: vec![10],
    };
    let rg = Dataset {
        images: vec![[0.0; teenygrad::data::FEATURES]],
        labels: vec![1, 2],
    };
    sgd.step(&mut layer);
    adam.step(&mut layer);
    let (emb, ids) = (Embedding::<4, 2>::init(&mut seeded(6)), &[1, 4][..]);
    let chain = (emb.clone(), Linear::<2, 3>::init(&mut seeded(7)));
    let ab = [&a, &b];
    let (mut frozen, mut sgd2) = (lin.detached(), Sgd::new(0.1));
    let (mut uphill, mut no_decay) = (Sgd::new(-0.1), Adam::new(0.1).betas(1.0, 0.999));
    let [mut m1, mut m2] = [8, 9].map(|seed| Linear::<4, 2>::init(&mut seeded(seed)));
    // One line each: `line!()` must be the line of the call.
    let cases: Vec<Case> = vec![
        ("add: ", line!(), Box::new(|| drop(&a + &b))),
        ("sub: ", line!(), Box::new(|| drop(a.clone() - b.clone()))),
        ("mul: ", line!(), Box::new(|| drop(&a * b.clone()))),
        ("div: ", line!(), Box::new(|| drop(a.clone() / &b))),
        ("maximum: ", line!(), Box::new(|| drop(a.maximum(&b)))),
        ("lt: ", line!(), Box::new(|| drop(a.lt(&b)))),
        ("where_else: ", line!(), Box::new(|| drop(b.where_else(&a, &b)))),
        ("cat: ", line!(), Box::new(|| drop(a.cat(&b, Axis::<1>)))),
        ("matmul: ", line!(), Box::new(|| drop(w.matmul(&m)))),
        ("broadcast_to: ", line!(), Box::new(|| drop(a.broadcast_to(five)))),
        ("reshape: ", line!(), Box::new(|| drop(a.reshape_to(five)))),
        ("mse: ", line!(), Box::new(|| drop(mse(&a, &b)))),
        ("mse: ", line!(), Box::new(|| drop(a.mse(&b)))),
        ("l1_loss: ", line!(), Box::new(|| drop(a.l1_loss(&b)))),
        ("huber_loss: ", line!(), Box::new(|| drop(a.huber_loss(&b, 1.0)))),
        ("huber", line!(), Box::new(|| drop(a.huber_loss(&a, -1.0)))),
        ("stack", line!(), Box::new(|| drop(Tensor::stack(ab, Axis::<1>)))),
        ("zeros_in: ", line!(), Box::new(|| drop(Rows::zeros_in(huge)))),
        ("Nesterov momentum", line!(), Box::new(|| opt.step(&mut layer))),
        ("backward through a graph", line!(), Box::new(|| used.backward())),
        ("the optimizer holds", line!(), Box::new(|| sgd.step(&mut wide))),
        ("the optimizer holds", line!(), Box::new(|| adam.step(&mut wide2))),
        ("step: no parameter", line!(), Box::new(|| sgd2.step(&mut frozen))),
        ("SGD: lr must be", line!(), Box::new(|| uphill.step(&mut m1))),
        ("Adam: betas.0", line!(), Box::new(|| no_decay.step(&mut m2))),
        ("clip_grad", line!(), Box::new(|| _ = clip(&mut lin, -1.0))),
        ("Batch", line!(), Box::new(|| _ = Batcher::new(9, 0, keep, r))),
        ("Dataset::gather", line!(), Box::new(|| drop(data.gather(&[1])))),
        ("Dataset::gather: the", line!(), Box::new(|| drop(rg.gather(&[])))),
        ("Dataset: sample 0", line!(), Box::new(|| _ = bad.class_counts())),
        ("Dataset: sample", line!(), Box::new(|| _ = bad.majority_class())),
        ("render", line!(), Box::new(|| _ = render_digit(10, r2))),
        ("Embedding", line!(), Box::new(|| drop(emb.forward(ids)))),
        ("Embedding", line!(), Box::new(|| drop(chain.forward(ids)))),
    ];
    let sites: Vec<_> = cases
        .into_iter()
        .map(|(op, line, case)| (op, line, panic_site(case)))
        .collect();
    // The default hook again, so a failing assertion below is reported.
    drop(panic::take_hook());
    for (start, line, (file, reported, message)) in sites {
        assert_eq!((file.as_str(), reported), (file!(), line), "{message}");
        assert!(message.starts_with(start), "{message}");
    }
}
