//! A small pool of worker threads for large kernels, matrix products and optimizer updates.
//!
//! Work is split into numbered tasks that the caller and the workers claim one at a time, so a
//! worker that wakes late costs nothing: the caller takes its tasks. Splits never change results:
//! elementwise work and the rows of a product are independent outputs, each computed exactly as
//! one thread would, and reductions are cut into pieces fixed by their shape (see
//! `FusedKernel::run`).
//!
//! `TEENYGRAD_THREADS` sets the thread count, caller included (default: the machine's available
//! parallelism; `1` runs everything on the caller's thread), read once; a value that cannot be
//! used is reported on stderr. Only one split job runs at a time:
//! a job started while another runs (from another thread, or nested) runs on its caller alone.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::{Duration, Instant};

use super::stats;

/// The most threads a split uses.
const MAX_THREADS: usize = 64;

/// The number of threads splits use, the caller's included.
pub(crate) fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let available = std::thread::available_parallelism().map_or(1, |p| p.get());
        let setting = std::env::var("TEENYGRAD_THREADS").ok();
        let (threads, warning) = thread_count(setting.as_deref(), available);
        if let Some(warning) = warning {
            // Read once, on the first kernel: a typo would otherwise go unnoticed.
            eprintln!("teenygrad: {warning}");
        }
        threads
    })
}

/// The thread count `TEENYGRAD_THREADS=setting` asks for (surrounding spaces allowed), and what
/// to tell the user when it cannot be used as given: anything but a whole number from 1 to
/// [`MAX_THREADS`] falls back to the available parallelism, or to the most there can be.
fn thread_count(setting: Option<&str>, available: usize) -> (usize, Option<String>) {
    let default = available.clamp(1, MAX_THREADS);
    let Some(setting) = setting else {
        return (default, None);
    };
    match setting.trim().parse::<usize>() {
        Ok(n @ 1..=MAX_THREADS) => (n, None),
        Ok(n) if n > MAX_THREADS => (
            MAX_THREADS,
            Some(format!(
                "TEENYGRAD_THREADS={n} is more than {MAX_THREADS}; using {MAX_THREADS}"
            )),
        ),
        _ => (
            default,
            Some(format!(
                "TEENYGRAD_THREADS={setting:?} is not a thread count from 1 to {MAX_THREADS}; using {default}"
            )),
        ),
    }
}

/// Runs `task(i)` for every `i` in `0..tasks`, on the pool's threads and the caller's, and returns
/// when all have finished. A panic in a task does not stop the others: the first one is resumed
/// here once every task has run.
pub(crate) fn run(tasks: usize, task: &(dyn Fn(usize) + Sync)) {
    let pool = pool();
    let job_lock = if tasks < 2 || pool.workers.load(Ordering::Relaxed) == 0 {
        None
    } else {
        match pool.job_lock.try_lock() {
            Ok(guard) => Some(guard),
            // The lock guards no data; a panic that unwound through a job leaves it usable.
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    };
    let Some(_job_lock) = job_lock else {
        let next = AtomicUsize::new(0);
        if let Some(payload) = claim_all(task, &next, tasks) {
            resume_unwind(payload);
        }
        return;
    };
    stats::update(|s| s.parallel_jobs += 1);
    // SAFETY: the reference is only used by workers that joined this job, and this function
    // does not return (or unwind) before every one of them has left it (the wait below).
    let erased: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(task) };
    let next = AtomicUsize::new(0);
    // SAFETY: as for `task`: this local outlives every worker's use of it.
    let next: &'static AtomicUsize = unsafe { std::mem::transmute(&next) };
    let sleepers = {
        let mut slot = pool.lock();
        slot.generation += 1;
        slot.job = Some(Job {
            task: erased,
            next,
            tasks,
        });
        slot.joined = 0;
        pool.published.store(slot.generation, Ordering::Release);
        slot.sleepers
    };
    // Workers still spinning from the last job see `published`; only sleeping ones need waking.
    if sleepers > 0 {
        pool.wake.notify_all();
    }
    let mine = claim_all(erased, next, tasks);
    let panic = {
        let mut slot = pool.lock();
        // No worker may join after this; then wait for those that did, spinning first: they are
        // finishing their last task, and sleeping costs a context switch.
        slot.job = None;
        if slot.joined > 0 {
            drop(slot);
            let started = Instant::now();
            while pool.active.load(Ordering::Acquire) > 0 && started.elapsed() < CALLER_SPIN {
                std::hint::spin_loop();
            }
            slot = pool.lock();
            while slot.joined > 0 {
                slot.caller_waiting = true;
                slot = pool.done.wait(slot).unwrap_or_else(|e| e.into_inner());
            }
            slot.caller_waiting = false;
        }
        // Taking the lock after the workers' last release of it makes their writes visible here.
        slot.panic.take()
    };
    let mut first = mine;
    if let Some(payload) = panic {
        keep_first(&mut first, payload);
    }
    if let Some(payload) = first {
        resume_unwind(payload);
    }
}

/// Runs `task(i, &mut items[i])` for every item, as [`run`] does: each item is handed to exactly
/// one task, so tasks can write their own part of an output.
pub(crate) fn for_each_mut<T: Send>(items: &mut [T], task: &(dyn Fn(usize, &mut T) + Sync)) {
    // Each lock is taken once, by the one task of its item: it only proves to the compiler that
    // no two tasks share an item.
    let cells: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    run(cells.len(), &|i| {
        let mut item = cells[i].lock().unwrap_or_else(|e| e.into_inner());
        task(i, &mut item);
    });
}

/// Runs tasks until none is left to claim, and returns the first panic among them.
fn claim_all(task: &(dyn Fn(usize) + Sync), next: &AtomicUsize, tasks: usize) -> Option<Box<dyn Any + Send>> {
    let mut first_panic = None;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= tasks {
            return first_panic;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| task(i))) {
            keep_first(&mut first_panic, payload);
        }
    }
}

/// Keeps `payload` in `first` if that is empty; leaks it otherwise. A payload is any value a
/// task passed to `panic_any`, and its `Drop` may panic too: dropped in [`claim_all`] on the
/// caller's thread, it would unwind [`run`] while workers still use the job it lent them; on a
/// worker, it would end that worker inside the job, and the caller would wait for ever.
fn keep_first(first: &mut Option<Box<dyn Any + Send>>, payload: Box<dyn Any + Send>) {
    match first {
        None => *first = Some(payload),
        Some(_) => std::mem::forget(payload),
    }
}

#[derive(Clone, Copy)]
struct Job {
    task: &'static (dyn Fn(usize) + Sync),
    next: &'static AtomicUsize,
    tasks: usize,
}

struct Slot {
    generation: u64,
    job: Option<Job>,
    /// Workers inside the current job.
    joined: usize,
    panic: Option<Box<dyn Any + Send>>,
    /// Workers waiting on `wake`.
    sleepers: usize,
    /// True while the caller waits on `done`.
    caller_waiting: bool,
}

struct Pool {
    /// Worker threads started (the caller is not one of them).
    workers: AtomicUsize,
    /// Held by the one caller whose job is running.
    job_lock: Mutex<()>,
    slot: Mutex<Slot>,
    wake: Condvar,
    done: Condvar,
    /// Copies of `slot.generation` and `slot.joined`, for spinning without the lock. The slot
    /// stays the truth: a spinner that sees a change takes the lock before acting on it.
    published: AtomicU64,
    active: AtomicUsize,
}

/// After a job, a worker watches for the next one this long before sleeping: the jobs of a
/// training step come a few tens of microseconds apart, and waking a sleeping thread costs a
/// system call on each side.
const WORKER_SPIN: Duration = Duration::from_micros(200);

/// How long a caller spins for the workers to leave its job before sleeping.
const CALLER_SPIN: Duration = Duration::from_millis(1);

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            workers: AtomicUsize::new(0),
            job_lock: Mutex::new(()),
            slot: Mutex::new(Slot {
                generation: 0,
                job: None,
                joined: 0,
                panic: None,
                sleepers: 0,
                caller_waiting: false,
            }),
            wake: Condvar::new(),
            done: Condvar::new(),
            published: AtomicU64::new(0),
            active: AtomicUsize::new(0),
        }));
        // Threads that cannot be started are simply missing: tasks are claimed, not assigned.
        let spawned = (0..threads() - 1)
            .take_while(|i| {
                std::thread::Builder::new()
                    .name(format!("teenygrad-{i}"))
                    .spawn(move || work(pool))
                    .is_ok()
            })
            .count();
        pool.workers.store(spawned, Ordering::Relaxed);
        pool
    })
}

fn work(pool: &'static Pool) {
    let mut seen = 0;
    loop {
        let started = Instant::now();
        while pool.published.load(Ordering::Acquire) == seen && started.elapsed() < WORKER_SPIN {
            std::hint::spin_loop();
        }
        let job = {
            let mut slot = pool.lock();
            while slot.generation == seen || slot.job.is_none() {
                if slot.generation != seen && slot.job.is_none() {
                    seen = slot.generation; // a job that ended before this worker came
                }
                slot.sleepers += 1;
                slot = pool.wake.wait(slot).unwrap_or_else(|e| e.into_inner());
                slot.sleepers -= 1;
            }
            seen = slot.generation;
            slot.joined += 1;
            pool.active.store(slot.joined, Ordering::Release);
            slot.job.expect("checked above")
        };
        let panic = claim_all(job.task, job.next, job.tasks);
        let mut slot = pool.lock();
        if let Some(payload) = panic {
            keep_first(&mut slot.panic, payload);
        }
        slot.joined -= 1;
        pool.active.store(slot.joined, Ordering::Release);
        if slot.joined == 0 && slot.caller_waiting {
            pool.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_settings_outside_one_to_the_most_are_reported() {
        assert_eq!(thread_count(None, 2), (2, None));
        assert_eq!(thread_count(None, 500), (MAX_THREADS, None));
        assert_eq!(thread_count(Some("1"), 2), (1, None));
        assert_eq!(thread_count(Some(" 3 "), 2), (3, None));
        for bad in ["0", "abc", "", "-1", "2.5"] {
            let (n, warning) = thread_count(Some(bad), 2);
            assert_eq!(n, 2, "{bad:?}");
            let warning = warning.expect("a warning");
            assert!(warning.contains(&format!("{bad:?}")), "{warning}");
        }
        let (n, warning) = thread_count(Some("65"), 2);
        assert_eq!(n, MAX_THREADS);
        assert!(warning.expect("a warning").contains("more than 64"));
    }

    #[test]
    fn every_task_runs_once() {
        for tasks in [0, 1, 2, 3, 17, 1000] {
            let hits: Vec<AtomicU64> = (0..tasks).map(|_| AtomicU64::new(0)).collect();
            run(tasks, &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "{tasks} tasks"
            );
        }
    }

    /// Jobs further apart than a worker spins: each finds the workers asleep and wakes them.
    #[test]
    fn jobs_after_the_workers_fell_asleep_complete() {
        for _ in 0..20 {
            let hits = AtomicU64::new(0);
            run(6, &|_| {
                hits.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(hits.load(Ordering::Relaxed), 6);
            std::thread::sleep(WORKER_SPIN * 2);
        }
    }

    #[test]
    fn a_panicking_task_panics_the_caller_after_every_other_task_ran() {
        let finished = AtomicU64::new(0);
        let result = catch_unwind(AssertUnwindSafe(|| {
            run(8, &|i| {
                if i == 5 {
                    panic!("task 5");
                }
                finished.fetch_add(1, Ordering::Relaxed);
            })
        }));
        assert!(result.is_err());
        assert_eq!(finished.load(Ordering::Relaxed), 7);
        // The pool still works afterwards.
        let hits = AtomicU64::new(0);
        run(4, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 4);
    }

    /// Tasks that panic with payloads whose `Drop` panics as well: the first is resumed for the
    /// caller to handle, the others are never dropped inside the pool (one dropped in a claim
    /// loop unwound out of it).
    #[test]
    fn payloads_that_panic_when_dropped_stay_in_their_box() {
        struct Bomb;
        impl Drop for Bomb {
            fn drop(&mut self) {
                panic!("a payload's drop");
            }
        }
        for through_pool in [false, true] {
            let result = catch_unwind(AssertUnwindSafe(|| {
                let task = |_: usize| std::panic::panic_any(Bomb);
                match through_pool {
                    true => run(6, &task),
                    false => _ = claim_all(&task, &AtomicUsize::new(0), 6).map(resume_unwind),
                }
            }));
            let payload = result.expect_err("a task panicked");
            assert!(payload.is::<Bomb>());
            std::mem::forget(payload);
        }
        // The pool still works afterwards.
        let hits = AtomicU64::new(0);
        run(4, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn nested_and_concurrent_jobs_complete() {
        let total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..50 {
                        run(4, &|_| {
                            run(3, &|_| {
                                total.fetch_add(1, Ordering::Relaxed);
                            })
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(Ordering::Relaxed), 3 * 50 * 12);
    }
}
