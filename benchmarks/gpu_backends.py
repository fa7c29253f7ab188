"""Unsloth against plain transformers + PEFT on the real train.py path, side by side, on one CUDA GPU.

    python benchmarks/gpu_backends.py --model /tmp/qwen3-1.7b --steps 4            # both backends, one table
    python benchmarks/gpu_backends.py --model /tmp/qwen3-1.7b --memory-search      # largest settings under budget
    python benchmarks/gpu_backends.py --model DIR --memory-budget-gib 22.5 --backends unsloth

Each measurement runs train.py's own main() (real SQLEnv, real few-shot system prompt, real
tokenizer and chat template) in a fresh process, because Unsloth patches TRL and transformers
for the whole process: the plain backend must never see it. The model should be a random-weight
Qwen3-1.7B (`python tiny_model.py --out DIR --size 1.7b`): shapes decide speed and memory, and
random weights generate to the length cap, the worst case. Random weights make no tool calls,
so the tool-loop turn count shows what generation did, not what a trained model would do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
MEMORY_SEARCH_GENERATIONS = (6, 8, 12, 16)
MEMORY_SEARCH_COMPLETION_LENGTHS = (512, 1024)


def measure_one(
    backend: str, model: str, steps: int, num_generations: int, max_completion_length: int, groups: int = 1
) -> dict:
    """Run in a child process: a few GRPO steps of train.main, timing generation inside each step."""
    sys.path.insert(0, str(REPO_DIR))
    import torch

    import train

    generation_seconds: list[float] = []
    generated_tokens: list[int] = []
    turns: list[int] = []

    def instrument(trainer: Any) -> None:
        original = trainer._generate_single_turn

        def timed(prompt_ids, *args, **kwargs):
            torch.cuda.synchronize()
            start = time.perf_counter()
            completion_ids, logprobs = original(prompt_ids, *args, **kwargs)
            torch.cuda.synchronize()
            generation_seconds.append(time.perf_counter() - start)
            generated_tokens.append(sum(len(ids) for ids in completion_ids))
            turns.append(1)
            return completion_ids, logprobs

        trainer._generate_single_turn = timed

    out_dir = tempfile.mkdtemp(prefix=f"bench-{backend}-")
    argv = [
        "--backend", backend, "--model", model, "--output_dir", out_dir, "--phase", "easy",
        "--max_steps", str(steps), "--num_generations", str(num_generations),
        "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", str(num_generations * groups),
        "--max_completion_length", str(max_completion_length), "--save_strategy", "no", "--report_to", "none",
        "--bf16", "true", "--max_questions", str(groups * steps + 2),
    ]
    torch.cuda.reset_peak_memory_stats()
    train.main(argv, before_train=instrument)
    history = [json.loads(line) for line in (Path(out_dir) / "easy" / "metrics.jsonl").read_text().splitlines()]
    step_times = [entry["step_time"] for entry in history if "step_time" in entry]
    # Generation calls per optimizer step: one per turn; steps after the first skip the warm-up.
    calls_per_step = max(1, len(generation_seconds) // max(1, len(step_times)))
    warm_generation = generation_seconds[calls_per_step:]
    warm_tokens = generated_tokens[calls_per_step:]
    median_step = statistics.median(step_times[1:] or step_times)
    generation_per_step = sum(warm_generation) / max(1, len(step_times) - 1)
    return {
        "backend": backend,
        "num_generations": num_generations,
        "max_completion_length": max_completion_length,
        "prompt_groups_per_step": groups,
        "steps": len(step_times),
        "median_step_s": round(median_step, 2),
        "generation_tokens_per_s": round(sum(warm_tokens) / max(sum(warm_generation), 1e-9), 1),
        "tool_loop_turns_per_step": round(len(turns) / max(1, len(step_times)), 2),
        "generation_share": round(generation_per_step / median_step, 3) if median_step else None,
        "peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
    }


def run_child(
    backend: str, model: str, steps: int, num_generations: int, length: int, timeout_s: int, groups: int = 1
) -> dict:
    """One measurement in a fresh Python process; an out-of-memory or crash becomes a row saying so."""
    command = [sys.executable, __file__, "--child", backend, "--model", model, "--steps", str(steps),
               "--num-generations", str(num_generations), "--max-completion-length", str(length),
               "--groups-per-step", str(groups)]
    if backend == "transformers":
        command += ["--backend", "transformers"]  # seen by train.py at import: keeps Unsloth out
    started = time.time()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO_DIR)
    except subprocess.TimeoutExpired:
        return {"backend": backend, "num_generations": num_generations, "max_completion_length": length,
                "error": f"timed out after {timeout_s} s"}
    for line in reversed(result.stdout.splitlines()):
        if line.startswith("BENCH_RESULT "):
            row = json.loads(line[len("BENCH_RESULT "):])
            row["wall_s"] = round(time.time() - started, 1)
            return row
    tail = (result.stdout + result.stderr)[-1500:]
    error = "out of memory" if "OutOfMemory" in tail or "out of memory" in tail else f"failed: {tail}"
    return {"backend": backend, "num_generations": num_generations, "max_completion_length": length, "error": error}


def print_table(rows: list[dict]) -> None:
    columns = ["backend", "num_generations", "prompt_groups_per_step", "max_completion_length", "median_step_s", "generation_tokens_per_s",
               "tool_loop_turns_per_step", "generation_share", "peak_allocated_gib", "peak_reserved_gib", "error"]
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(column, "")) for column in columns) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="local model folder (random Qwen3-1.7B for honest shapes)")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps per measurement (first is warm-up)")
    parser.add_argument("--backends", nargs="+", default=["unsloth", "transformers"])
    parser.add_argument("--num-generations", type=int, default=6)
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--groups-per-step", type=int, default=1,
                        help="prompt groups generated together per step (gradient_accumulation_steps = N x this)")
    parser.add_argument("--memory-search", action="store_true", help="try larger settings against the budget")
    parser.add_argument("--memory-budget-gib", type=float, default=22.5, help="an L4's usable memory by default")
    parser.add_argument("--timeout-s", type=int, default=900)
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--backend", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        row = measure_one(args.child, args.model, args.steps, args.num_generations, args.max_completion_length,
                          args.groups_per_step)
        print("BENCH_RESULT " + json.dumps(row), flush=True)
        return
    if not Path(args.model).is_dir():
        parser.error(f"--model {args.model} is not a folder; build one with: python tiny_model.py --out DIR --size 1.7b")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows = [run_child(backend, args.model, args.steps, args.num_generations, args.max_completion_length,
                      args.timeout_s, args.groups_per_step) for backend in args.backends]
    print_table(rows)
    by_backend = {row["backend"]: row for row in rows if "error" not in row}
    if {"unsloth", "transformers"} <= set(by_backend):
        ratio = by_backend["transformers"]["median_step_s"] / by_backend["unsloth"]["median_step_s"]
        print(f"\nplain TRL step time / Unsloth step time = {ratio:.2f}x")
    if args.memory_search:
        search_rows = []
        for backend in args.backends:
            for length in MEMORY_SEARCH_COMPLETION_LENGTHS:
                for generations in MEMORY_SEARCH_GENERATIONS:
                    row = run_child(backend, args.model, 2, generations, length, args.timeout_s)
                    row["fits_budget"] = "error" not in row and row["peak_reserved_gib"] <= args.memory_budget_gib
                    search_rows.append(row)
                    if not row["fits_budget"]:
                        break  # larger group sizes only need more memory
        print(f"\nmemory search (budget {args.memory_budget_gib} GiB reserved):")
        print_table(search_rows)
        rows += search_rows
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
