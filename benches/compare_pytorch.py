#!/usr/bin/env python3
"""Times the two MLP training steps of benches/mlp_step.rs and its inference passes in teenygrad
and, where PyTorch is installed, the same in PyTorch on the same machine in the same run, and
prints the ratios.

    python3 benches/compare_pytorch.py [--threads N] [--rounds R]

--threads N sets both sides' thread count: PyTorch's intra-op threads and TEENYGRAD_THREADS.

Each row is timed R times (default 5), each time teenygrad's criterion bench of it and then
PyTorch's, and the ratio of each pair is taken: on a shared machine whose speed drifts from one
minute to the next, a ratio of two figures taken minutes apart says more about the drift than
about either library. The row shows the medians of both sides' times and of the ratios, and the
lowest and highest ratio.

    python3 benches/compare_pytorch.py --ops [--threads N] [--rounds R]

compares everyday ops instead (benches/ops_vs_pytorch.rs against `OPS` below, the same names):
each round times all of teenygrad's, then all of PyTorch's (under `no_grad`), each op the
fastest of five runs of about 20 ms.

Not part of `cargo test`. Without PyTorch it prints teenygrad's figures and says PyTorch was
skipped.
"""
import argparse
import os
import re
import subprocess
import sys
import time

STEPS = [
    # (criterion name prefix, layer sizes, batch)
    ("mlp 64-128-10 b32", [64, 128, 10], 32),
    ("mlp 784-512-256-10 b128", [784, 512, 256, 10], 128),
]
INFERENCE = [
    ("mlp 64-128-10 b32", [64, 128, 10], 32),
    ("mlp 784-512-256-10 b128", [784, 512, 256, 10], 128),
    ("mlp 784-512-256-10 b1", [784, 512, 256, 10], 1),
]
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# Names as benches/ops_vs_pytorch.rs prints them; each takes the inputs `torch_inputs` makes.
OPS = [
    ("add [1024, 1024]", lambda t: t["x"] + t["y"]),
    ("bias add [1024, 1024] + [1024]", lambda t: t["x"] + t["bias"]),
    ("exp [1024, 1024]", lambda t: t["x"].exp()),
    ("tanh [1024, 1024]", lambda t: t["x"].tanh()),
    ("sigmoid [1024, 1024]", lambda t: t["x"].sigmoid()),
    ("gelu [1024, 1024]", lambda t: t["F"].gelu(t["x"])),
    ("exp of a transposed [1024, 1024]", lambda t: t["x"].t().exp()),
    ("sum [1024, 1024]", lambda t: t["x"].sum()),
    ("row sums [1024, 1024]", lambda t: t["x"].sum(1)),
    ("column sums [1024, 1024]", lambda t: t["x"].sum(0)),
    ("row maxima [1024, 1024]", lambda t: t["x"].amax(1)),
    ("batch mean [4096, 256]", lambda t: t["tall"].mean(0)),
    ("softmax [1024, 1024]", lambda t: t["x"].softmax(1)),
    ("log_softmax [1024, 1024]", lambda t: t["x"].log_softmax(1)),
    ("softmax [64, 256]", lambda t: t["small"].softmax(1)),
    ("log_softmax [64, 256]", lambda t: t["small"].log_softmax(1)),
    ("cross entropy [1024, 100]", lambda t: t["F"].cross_entropy(t["logits"], t["labels"])),
    ("layer norm [1024, 1024]", lambda t: t["norm"](t["x"])),
    ("softmax forward and backward [1024, 1024]", lambda t: input_gradient(t, lambda x: x.softmax(1))),
    ("layer norm forward and backward [1024, 1024]", lambda t: input_gradient(t, t["norm"])),
    ("embedding lookup [4096] of [10000, 256]", lambda t: t["F"].embedding(t["ids"], t["table"])),
    ("embedding forward and backward [4096] of [10000, 256]", lambda t: embedding_gradient(t)),
    ("cat [1024, 512] and [1024, 512] along columns", lambda t: t["torch"].cat([t["left"], t["right"]], 1)),
]


def input_gradient(t, f):
    """The gradient of `sum(f(x) * y)` with respect to a fresh copy of `x` (the layer norm's own
    parameters take none, as in the Rust bench, where they are detached)."""
    import torch

    with torch.enable_grad():
        x = t["x"].detach().requires_grad_()
        (f(x) * t["y"]).sum().backward()
        return x.grad


def embedding_gradient(t):
    """The table's gradient of `sum(embedding(ids, table) * w)`, from a fresh tracked copy."""
    import torch

    with torch.enable_grad():
        table = t["table"].detach().requires_grad_()
        (t["F"].embedding(t["ids"], table) * t["rows_weight"]).sum().backward()
        return table.grad


def teenygrad_time(name, threads):
    """Runs the criterion bench `name` and returns its median in seconds."""
    command = ["cargo", "bench", "--bench", "mlp_step", "--", name, "--exact"]
    env = dict(os.environ, TEENYGRAD_THREADS=str(threads))
    out = subprocess.run(
        command + ["--warm-up-time", "1", "--measurement-time", "2"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    for line in out.splitlines():
        match = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if match:
            return float(match.group(1)) * UNITS[match.group(2)]
    return None


def torch_model(sizes, threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def median_time(run):
    """The median over 5 rounds of 0.3 s of the time per call, after 50 calls to warm up."""
    for _ in range(50):
        run()
    runs = []
    for _ in range(5):
        n = 0
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:
            run()
            n += 1
        runs.append((time.perf_counter() - start) / n)
    return sorted(runs)[len(runs) // 2]


def torch_step_time(sizes, batch, threads):
    import torch

    model = torch_model(sizes, threads)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return median_time(step)


def torch_inference_time(sizes, batch, threads):
    import torch

    model = torch_model(sizes, threads).eval()
    x = torch.rand(batch, sizes[0])

    def forward():
        with torch.no_grad():
            model(x)

    return median_time(forward)


def teenygrad_op_times(threads):
    """Runs benches/ops_vs_pytorch.rs once and returns its time per op, in seconds."""
    command = ["cargo", "bench", "--bench", "ops_vs_pytorch"]
    env = dict(os.environ, TEENYGRAD_THREADS=str(threads))
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    times = {}
    for line in out.splitlines():
        match = re.fullmatch(r"(.+): (\S+) s", line.strip())
        if match:
            times[match.group(1)] = float(match.group(2))
    return times


def torch_inputs(threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(7)
    return {
        "x": torch.randn(1024, 1024),
        "y": torch.randn(1024, 1024),
        "bias": torch.randn(1024),
        "tall": torch.randn(4096, 256),
        "small": torch.randn(64, 256),
        "logits": torch.randn(1024, 100),
        "labels": torch.arange(1024) * 37 % 100,
        "norm": torch.nn.LayerNorm(1024).requires_grad_(False),
        "table": torch.randn(10000, 256),
        "ids": torch.arange(4096) * 7919 % 10000,
        "rows_weight": torch.randn(4096, 256),
        "left": torch.randn(1024, 512),
        "right": torch.randn(1024, 512),
        "F": torch.nn.functional,
        "torch": torch,
    }


def fastest_time(run):
    """The fastest of 5 runs of as many calls as fill about 20 ms, per call."""
    run()
    start = time.perf_counter()
    run()
    once = max(time.perf_counter() - start, 1e-7)
    calls = min(max(int(0.02 / once), 3), 20000)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def compare_ops(threads, rounds, have_torch):
    ours = {name: [] for name, _ in OPS}
    theirs = {name: [] for name, _ in OPS}
    if have_torch:
        import torch

        inputs = torch_inputs(threads)
    for _ in range(rounds):
        for name, seconds in teenygrad_op_times(threads).items():
            ours.setdefault(name, []).append(seconds)
        if have_torch:
            with torch.no_grad():
                for name, op in OPS:
                    theirs[name].append(fastest_time(lambda: op(inputs)))
    print(f"{'op':<46}{'teenygrad':>12}{'pytorch':>12}{'ratio':>8}{'range':>14}", flush=True)
    for name, _ in OPS:
        if not ours.get(name):
            print(f"{name}: no teenygrad figure in the bench output", file=sys.stderr)
            continue
        print_row(name, 46, ours[name], theirs[name])


def median(values):
    return sorted(values)[len(values) // 2]


def print_row(name, width, ours, theirs):
    """One row: the medians of both sides' times, and of the ratios of each pair with their range."""
    if theirs:
        ratios = [a / b for a, b in zip(ours, theirs)]
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}"
        print(
            f"{name:<{width}}{median(ours) * 1e6:>10.1f}µs{median(theirs) * 1e6:>10.1f}µs"
            f"{median(ratios):>8.2f}{spread:>14}",
            flush=True,
        )
    else:
        print(f"{name:<{width}}{median(ours) * 1e6:>10.1f}µs{'-':>12}{'-':>8}", flush=True)


def print_rows(title, rows, suffix, threads, rounds, torch_time):
    print(f"{title:<28}{'teenygrad':>12}{'pytorch':>12}{'ratio':>8}{'range':>14}", flush=True)
    for name, sizes, batch in rows:
        bench = f"{name} {suffix}"
        ours, theirs = [], []
        for _ in range(rounds):
            mine = teenygrad_time(bench, threads)
            if mine is None:
                break
            ours.append(mine)
            if torch_time:
                theirs.append(torch_time(sizes, batch))
        if not ours:
            print(f"{bench}: no teenygrad figure in the bench output", file=sys.stderr)
            continue
        print_row(name, 28, ours, theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="threads for both (default 1)")
    parser.add_argument("--rounds", type=int, default=5, help="pairs of timings per row (default 5)")
    parser.add_argument("--ops", action="store_true", help="compare everyday ops, not the MLP")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
        print("PyTorch is not installed: showing teenygrad's figures only.", file=sys.stderr)
    threads, rounds = args.threads, max(args.rounds, 1)
    if args.ops:
        compare_ops(threads, rounds, have_torch)
        return
    step = have_torch and (lambda sizes, batch: torch_step_time(sizes, batch, threads))
    forward = have_torch and (lambda sizes, batch: torch_inference_time(sizes, batch, threads))
    print_rows("train step", STEPS, "train step", threads, rounds, step)
    print_rows("inference", INFERENCE, "inference", threads, rounds, forward)


if __name__ == "__main__":
    main()
