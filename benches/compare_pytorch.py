#!/usr/bin/env python3
"""Times the two MLP training steps of benches/mlp_step.rs in teenygrad and, where PyTorch is
installed, the same steps in PyTorch on the same machine in the same run, and prints the ratios.

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


def torch_step_time(sizes, batch, threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes, sizes[1:])):
        layers.append(torch.nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(50):
        step()
    runs = []
    for _ in range(7):
        n = 0
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:
            step()
            n += 1
        runs.append((time.perf_counter() - start) / n)
    return sorted(runs)[len(runs) // 2]


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
    print(f"{'train step':<28}{'teenygrad':>12}{'pytorch':>12}{'ratio':>8}")
    for name, sizes, batch in STEPS:
        mine = ours.get(f"{name} train step")
        if mine is None:
            print(f"{name}: no teenygrad figure in the bench output", file=sys.stderr)
            continue
        if have_torch:
            theirs = torch_step_time(sizes, batch, args.threads)
            print(f"{name:<28}{mine * 1e6:>10.1f}µs{theirs * 1e6:>10.1f}µs{mine / theirs:>8.2f}")
        else:
            print(f"{name:<28}{mine * 1e6:>10.1f}µs{'-':>12}{'-':>8}")


if __name__ == "__main__":
    main()
