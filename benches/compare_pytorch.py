#!/usr/bin/env python3
"""Times the two MLP training steps of benches/mlp_step.rs and its inference passes in teenygrad
and, where PyTorch is installed, the same in PyTorch on the same machine in the same run, and
prints the ratios.

    python3 benches/compare_pytorch.py [--threads N]

--threads N sets both sides' thread count: PyTorch's intra-op threads and TEENYGRAD_THREADS.

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


def teenygrad_times(threads):
    """Runs the criterion bench and returns {bench name: median seconds}."""
    command = ["cargo", "bench", "--bench", "mlp_step"]
    env = dict(os.environ, TEENYGRAD_THREADS=str(threads))
    out = subprocess.run(
        command + ["--", "--warm-up-time", "1", "--measurement-time", "3"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    times = {}
    name = None
    for line in out.splitlines():
        if line.startswith("mlp "):
            name = line.split("  ")[0].strip()
        match = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
        if match and name:
            times[name] = float(match.group(1)) * UNITS[match.group(2)]
            name = None
    return times


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
    """The median over 7 rounds of 0.3 s of the time per call, after 50 calls to warm up."""
    for _ in range(50):
        run()
    runs = []
    for _ in range(7):
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


def print_rows(title, rows, suffix, ours, torch_time):
    print(f"{title:<32}{'teenygrad':>12}{'pytorch':>12}{'ratio':>8}")
    for name, sizes, batch in rows:
        mine = ours.get(f"{name} {suffix}")
        if mine is None:
            print(f"{name}: no teenygrad figure in the bench output", file=sys.stderr)
            continue
        if torch_time:
            theirs = torch_time(sizes, batch)
            print(f"{name:<32}{mine * 1e6:>10.1f}µs{theirs * 1e6:>10.1f}µs{mine / theirs:>8.2f}")
        else:
            print(f"{name:<32}{mine * 1e6:>10.1f}µs{'-':>12}{'-':>8}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="threads for both (default 1)")
    args = parser.parse_args()
    ours = teenygrad_times(args.threads)
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
        print("PyTorch is not installed: showing teenygrad's figures only.", file=sys.stderr)
    threads = args.threads
    step = have_torch and (lambda sizes, batch: torch_step_time(sizes, batch, threads))
    forward = have_torch and (lambda sizes, batch: torch_inference_time(sizes, batch, threads))
    print_rows("train step", STEPS, "train step", ours, step)
    print_rows("inference", INFERENCE, "inference", ours, forward)


if __name__ == "__main__":
    main()
