"""Where a GRPO step's time goes, on the real train.py path, for each backend and setting, side by side.

    python benchmarks/gpu_backends.py --model /tmp/qc --steps 4                  # real 0.5B, both backends
    python benchmarks/gpu_backends.py --model /tmp/qc --backends unsloth \\
        --variants before stop stop+graphs --out docs/gpu_measurements/multiturn.json
    python benchmarks/gpu_backends.py --model /tmp/q17 --memory-search           # largest settings under budget

Each backend runs in a fresh process, because Unsloth patches TRL and transformers for the whole
process: the plain backend must never see it. Inside one process the variants run one after the
other (they differ in train.py flags only, so Unsloth's import and kernel compilation are paid once).
Variants: ``before`` (no stop rule, no Qwen2 decode graphs: the project as it was), ``stop`` (turns
end at ``</tool_call>``), ``stop+graphs`` (and Unsloth's CUDA-graph decode for Qwen2 too),
``stop+graphs+cap`` (and tool-loop turns capped at their episodes' remaining budget: train.py's defaults),
``stop+graphs+cap+turn256`` (and every turn at 256 new tokens, ``--max_turn_tokens 256``),
``stop+graphs+cap+grouped`` (train.py's defaults until 2026-12-06e), ``...+grouped+turn256`` and ``...+grouped+merged``
(the rollouts from weights with the LoRA folded in, ``--merged_generation``), ``...+grouped+merged+turn256`` (both:
train.py's defaults now), ``vllm`` (the rollouts
through vLLM, ``--fast_inference``, where it is installed: on the GPU machine after ``gpu_session.sh vinstall``) and
``vllm+l4share`` (the engine's memory share an L4 would give it). A vLLM row adds how closely its rollouts line up
with the trainer's scores (TRL's sampling log-probability difference and importance-sampling ratio).
``--prompts-per-step 4`` gives the learning proof's steps (4 prompt groups, 24 episodes with 6 generations).

Per variant it reports the median step time after the first (warm-up) step, and what the step spent:
each generation call of TRL's tool loop (batch, prompt lengths, new tokens, seconds, decode steps/s, and
its split into setup, prefill, decode and teardown, from hooks on the model's forward), the environment's
own time (every SQLEnv tool call timed), and the rest (log-probabilities, backward, optimizer). It then
generates one single-turn batch of the same size to the length cap with the same trainer, the reference for
"tool-loop generation reaches N% of single-turn tokens/s". With a model that makes real tool calls
(``python models.py fetch qwen2.5-coder-0.5b-instruct``) the steps are multi-turn; random weights make none.
Runs on CPU too (slowly), which is how its tests check it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))  # train.py, models.py and the rest, from any working directory
MEMORY_SEARCH_GENERATIONS = (6, 8, 12, 16)
MEMORY_SEARCH_COMPLETION_LENGTHS = (512, 1024)
UNCAPPED = ["--cap_turns_at_budget", "false"]  # the variants measured before the cap existed keep their meaning
SDPA = ["--grouped_decode_attention", "false"]  # ... and before generation.py's decode attention existed
GROUPED = ["--stop_at_tool_call", "true", "--decode_graphs", "true", "--cap_turns_at_budget", "true",
           "--grouped_decode_attention", "true"]  # the settings every ...+grouped variant starts from
VARIANTS: dict[str, list[str]] = {
    "before": ["--stop_at_tool_call", "false", "--decode_graphs", "false", *UNCAPPED, *SDPA],
    "stop": ["--stop_at_tool_call", "true", "--decode_graphs", "false", *UNCAPPED, *SDPA],
    "stop+graphs": ["--stop_at_tool_call", "true", "--decode_graphs", "true", *UNCAPPED, *SDPA],
    # One generation mode per rollout: Unsloth keeps its decode buffers and graphs across the tool loop's turns.
    "stop+graphs+rollout": ["--stop_at_tool_call", "true", "--decode_graphs", "true",
                            "--generation_mode_per_rollout", "true", *UNCAPPED, *SDPA],
    # Tool-loop turns decode at most what their episodes have left (train.py's default since 2026-12-02): each
    # call to its rows' largest budget, and since commit 9374b27 each row stopped at its own.
    # Plain TRL has no decode graphs: its like-for-like row against stop+graphs+cap.
    "stop+cap": ["--stop_at_tool_call", "true", "--decode_graphs", "false", "--cap_turns_at_budget", "true"],
    "stop+graphs+cap": ["--stop_at_tool_call", "true", "--decode_graphs", "true", "--cap_turns_at_budget", "true",
                        *SDPA],
    # And every turn capped at 256 new tokens, the learning proof's per-turn cap in eval (changes what a turn
    # that runs on is trained on: less of it).
    "stop+graphs+cap+turn256": ["--stop_at_tool_call", "true", "--decode_graphs", "true", "--cap_turns_at_budget",
                                "true", "--max_turn_tokens", "256", *SDPA],
    # train.py's defaults 2026-12-03 to 2026-12-06e: the decode step's attention as grouped products (generation.py).
    "stop+graphs+cap+grouped": GROUPED,
    # The defaults with 256-token turns: on the 1.5B's L4 step (96 rows, 1,024 tokens) two turns of one step ran
    # 700 and 875 tokens and held their calls 16 of the step's 32 s of generation (2026-12-06d).
    "stop+graphs+cap+grouped+turn256": [*GROUPED, "--max_turn_tokens", "256"],
    # The defaults with the rollouts generated from weights with the LoRA folded in (merged_generation.py): a decode
    # step without the adapter's two small products a projection.
    "stop+graphs+cap+grouped+merged": [*GROUPED, "--merged_generation", "true"],
    # Rollouts through vLLM (--fast_inference, issue 32): Unsloth's in-process engine under --backends unsloth, TRL's
    # colocate engine under transformers, at train.py's default memory share, with no turn cap (as measured before vLLM
    # took one). Its own bench call (BENCH_OUT): the engine takes its share of memory when the model loads.
    "vllm": ["--fast_inference", "true", "--stop_at_tool_call", "true", "--cap_turns_at_budget", "false"],
    # The same with the engine's share an L4 would give it: train.py's 0.5 of 24 GB is 0.15 of an 80 GB card, so
    # the row's peak reserved memory reads against the L4's 22.5 GiB.
    "vllm+l4share": ["--fast_inference", "true", "--stop_at_tool_call", "true", "--cap_turns_at_budget", "false",
                     "--vllm_memory_share", "0.15"],
    # train.py's defaults since 2026-12-06e: the grouped defaults with the LoRA folded and 256-token turns.
    "stop+graphs+cap+grouped+merged+turn256": [*GROUPED, "--merged_generation", "true", "--max_turn_tokens", "256"],
    # ... and one generation context a rollout: on the 1.5B's L4 step every one of a step's 19-20 generate calls
    # captured its decode graph again (2026-12-06f; Unsloth frees them each time TRL's per-turn context exits), about
    # 0.1 s of capture and an eager step a call, and the dropped graphs' memory pools stayed cached (reserved memory
    # +0.19 GiB a step). Measured once on the 0.5B (6 x 512): 13 -> 8 captures in 13 calls, the step 9% shorter; on
    # the 1.5B's L4 step in both orders (2026-12-06g): 12-13.5 captures a step against 18.5-19.7, the step 0.95-0.97x,
    # peak allocated +1.5 GiB (Unsloth keeps two batch sizes' decode buffers while the context is held).
    "stop+graphs+cap+grouped+merged+turn256+rollout": [*GROUPED, "--merged_generation", "true", "--max_turn_tokens",
                                                       "256", "--generation_mode_per_rollout", "true"],
}
# Each variant keeps measuring what its name says: a default added later stays off where the name does not ask for it.
LATER_DEFAULTS_OFF = {"--max_turn_tokens": "0", "--merged_generation": "false"}
VARIANTS = {name: [*flags, *(item for flag, off in LATER_DEFAULTS_OFF.items() if flag not in flags for item in (flag, off))]
            for name, flags in VARIANTS.items()}


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


class StepProfile:
    """Timings gathered inside train.main through its before_train hook."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []  # one per generation call of the tool loop
        self.env_seconds = 0.0
        self.env_calls = 0
        self.trainer: Any = None
        self.active = True  # off once training ends: the reference generations after it are not step time

    def install(self, trainer: Any) -> None:
        self.trainer = trainer
        generate_turn = trainer._generate_single_turn
        phases = CallPhases(generation_forward_module(trainer.model))

        def timed(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> Any:
            _synchronize()
            started = time.perf_counter()
            with phases.timing():
                completion_ids, logprobs = generate_turn(prompt_ids, *args, **kwargs)
            _synchronize()
            ended = time.perf_counter()
            seconds = ended - started
            if not self.active:
                return completion_ids, logprobs
            lengths = [len(ids) for ids in completion_ids]
            self.calls.append({
                "step": trainer.state.global_step, "batch": len(prompt_ids),
                "prompt_tokens_max": max(map(len, prompt_ids)),
                "prompt_tokens_mean": round(statistics.fmean(map(len, prompt_ids)), 1),
                "new_tokens_max": max(lengths), "new_tokens_sum": sum(lengths), "seconds": round(seconds, 3),
                "decode_steps_per_s": round(max(lengths) / seconds, 1) if seconds else None,
                **phases.split(started, ended),
                **decode_graph_stats(trainer.model),
            })
            return completion_ids, logprobs

        trainer._generate_single_turn = timed

    def time_environment(self) -> None:
        """Wrap every SQLEnv tool so the environment's own seconds are counted."""
        import functools

        from agent_env import TOOL_NAMES, SQLEnv

        for name in TOOL_NAMES:
            tool = getattr(SQLEnv, name)

            @functools.wraps(tool)
            def timed_tool(self_env: Any, *args: Any, _tool: Any = tool, **kwargs: Any) -> str:
                started = time.perf_counter()
                try:
                    return _tool(self_env, *args, **kwargs)
                finally:
                    self.env_seconds += time.perf_counter() - started
                    self.env_calls += 1

            setattr(SQLEnv, name, timed_tool)


def generation_forward_module(model: Any) -> Any:
    """The module whose forward generate() calls once per new token: the transformers CausalLM under any PEFT
    wrapper (PEFT's own PeftModelForCausalLM hands generate() down to it)."""
    for module in model.modules():
        cls = type(module)
        if cls.__name__.endswith("ForCausalLM") and not cls.__module__.startswith("peft"):
            return module
    return model


class CallPhases:
    """Where one generation call's time goes, from hooks on the model's forward: setup before the first forward,
    the prefill (the first forward, which also yields the first token), the decode (every later forward), and
    teardown after the last one. One CUDA synchronize per forward: generate() already waits on the GPU every
    token (its stopping check reads a device tensor), so the split costs little of what it measures."""

    def __init__(self, module: Any) -> None:
        self.active = False
        self.marks: list[tuple[float, float]] = []  # (start, end) of each forward during a timed call
        self._start = 0.0
        module.register_forward_pre_hook(self._before)
        module.register_forward_hook(self._after)

    def _before(self, *_: Any) -> None:
        if self.active:
            _synchronize()
            self._start = time.perf_counter()

    def _after(self, *_: Any) -> None:
        if self.active:
            _synchronize()
            self.marks.append((self._start, time.perf_counter()))

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        self.marks, self.active = [], True
        try:
            yield
        finally:
            self.active = False

    def split(self, started: float, ended: float) -> dict[str, Any]:
        if not self.marks:
            return {}
        (prefill_start, prefill_end), last_end = self.marks[0], self.marks[-1][1]
        durations = [end - start for start, end in self.marks]
        return {"forwards": len(self.marks), "setup_s": round(prefill_start - started, 4),
                "prefill_s": round(prefill_end - prefill_start, 4), "decode_s": round(last_end - prefill_end, 4),
                "teardown_s": round(ended - last_end, 4),
                # Under Unsloth's decode graphs the first decode step runs eagerly (it fills the cache) and a new
                # batch size captures on the next: the first forwards apart, then a steady step's median.
                "first_forwards_s": [round(seconds, 4) for seconds in durations[:4]],
                "steady_forward_ms": round(1000 * statistics.median(durations[4:]), 2) if durations[4:] else None}


def decode_graph_stats(model: Any) -> dict[str, int]:
    """Unsloth's CUDA-graph decode counters (captures, replays, eager steps), where the model has them."""
    for module in model.modules():
        state = module.__dict__.get("_unsloth_decode_graphs")
        if state is not None:
            return {key: int(getattr(state, key, 0) or 0) for key in ("captures", "replays", "eager_steps")}
    return {}


def single_turn_reference(trainer: Any, batch: int, new_tokens: int) -> dict[str, float]:
    """One generation call of ``batch`` copies of a training prompt, forced to ``new_tokens`` tokens."""
    prompt = trainer.processing_class.apply_chat_template(
        [{"role": "user", "content": "Count the rows of every table, one by one."}], tokenize=True,
        add_generation_prompt=True, return_dict=False)
    config = trainer.generation_config
    saved = (config.min_new_tokens, config.max_new_tokens)
    config.min_new_tokens = config.max_new_tokens = new_tokens
    try:
        _synchronize()
        started = time.perf_counter()
        completion_ids, _ = trainer._generate_single_turn([list(prompt)] * batch, None, {}, num_generations=1)
        _synchronize()
        seconds = time.perf_counter() - started
    finally:
        config.min_new_tokens, config.max_new_tokens = saved
    tokens = sum(len(ids) for ids in completion_ids)
    return {"batch": batch, "new_tokens": new_tokens, "seconds": round(seconds, 3),
            "tokens_per_s": round(tokens / seconds, 1)}


def greedy_graphs_check(trainer: Any, batch: int = 4, new_tokens: int = 96) -> dict[str, Any]:
    """Greedy completions of the same prompts with Unsloth's decode graphs allowed for the model and not:
    the graphed step must compute the same function (identical tokens), and its speed is reported."""
    import generation

    config = trainer.generation_config
    saved = (config.do_sample, config.max_new_tokens, config.min_new_tokens)
    config.do_sample, config.max_new_tokens, config.min_new_tokens = False, new_tokens, None
    prompts = [list(trainer.processing_class.apply_chat_template(
        [{"role": "user", "content": f"Write SQL that counts the rows of table t{index}."}], tokenize=True,
        add_generation_prompt=True, return_dict=False)) for index in range(batch)]
    outputs, seconds = {}, {}
    model_type = trainer.model.config.model_type
    try:
        for allowed in (False, True, False, True):  # twice each: the first call of each pays its warm-up
            generation.allow_unsloth_decode_graphs(model_type, allowed)
            _synchronize()
            started = time.perf_counter()
            outputs[allowed], _ = trainer._generate_single_turn(prompts, None, {}, num_generations=1)
            _synchronize()
            seconds[allowed] = time.perf_counter() - started
    finally:
        config.do_sample, config.max_new_tokens, config.min_new_tokens = saved
    return {"identical_tokens": outputs[True] == outputs[False], "eager_s": round(seconds[False], 3),
            "graphs_s": round(seconds[True], 3), **{f"graphs_{k}": v for k, v in decode_graph_stats(trainer.model).items()}}


def uses_vllm(variant: str) -> bool:
    return "--fast_inference" in VARIANTS[variant]


def batch_flags(prompts_per_step: int, num_generations: int, micro_batch: int | None) -> list[str]:
    """train.py flags for one optimizer step on ``prompts_per_step`` prompt groups, generated in one batch. Without
    ``micro_batch``: every group in one micro-batch (as this benchmark always ran); with it, micro-batches of that
    many completions, accumulated (TRL generates the whole step's batch at once either way)."""
    episodes = prompts_per_step * num_generations
    if micro_batch is None:
        return ["--per_device_train_batch_size", str(prompts_per_step),
                "--gradient_accumulation_steps", str(num_generations)]
    if episodes % micro_batch:
        raise ValueError(f"--micro-batch {micro_batch} must divide the step's {episodes} episodes")
    return ["--per_device_train_batch_size", str(micro_batch),
            "--gradient_accumulation_steps", str(episodes // micro_batch)]


def measure_variant(backend: str, model: str, variant: str, steps: int, num_generations: int,
                    max_completion_length: int, data_dir: str | None,
                    start_adapter: str | None = None, prompts_per_step: int = 1,
                    micro_batch: int | None = None) -> dict[str, Any]:
    """A few GRPO steps of train.main with one variant's flags, profiled."""
    import torch

    import train
    from training_logs import sampling_alignment

    profile = StepProfile()
    profile.time_environment()
    out_dir = tempfile.mkdtemp(prefix=f"bench-{backend}-{variant.replace('+', '-')}-")
    argv = [
        "--backend", backend, "--model", model, "--output_dir", out_dir, "--phase", "easy",
        "--max_steps", str(steps), "--num_generations", str(num_generations),
        *batch_flags(prompts_per_step, num_generations, micro_batch),
        "--max_completion_length", str(max_completion_length), "--save_strategy", "no", "--report_to", "none",
        "--max_questions", str(steps * prompts_per_step + 2), *VARIANTS[variant],
    ]
    if data_dir:
        argv += ["--data_dir", data_dir]
    if start_adapter:  # a warmed-up model, which makes real tool calls: multi-turn steps
        argv += ["--start_adapter", start_adapter]
    allocated_before = 0.0
    if torch.cuda.is_available():
        argv += ["--bf16", "true"]
        # What an earlier variant of this process left allocated counts in this one's peak (2026-12-06e: the third
        # of three variants peaked at 18.0 GiB where the first, alone, had 8.2): freed first, and what stays is shown.
        gc.collect()
        torch.cuda.empty_cache()
        allocated_before = torch.cuda.memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    env_before = (profile.env_seconds, profile.env_calls)
    train.main(argv, before_train=profile.install)
    profile.active = False
    history = [json.loads(line) for line in (Path(out_dir) / "easy" / "metrics.jsonl").read_text().splitlines()]
    step_times = [entry["step_time"] for entry in history if "step_time" in entry]
    warm = [call for call in profile.calls if call["step"] >= 1]  # step 0 is the warm-up step
    warm_steps = max(1, len(step_times) - 1)
    generation_per_step = sum(call["seconds"] for call in warm) / warm_steps
    median_step = statistics.median(step_times[1:] or step_times)
    env_seconds = profile.env_seconds - env_before[0]
    row = {
        "backend": backend, "variant": variant, "model": model, "start_adapter": start_adapter,
        "num_generations": num_generations, "prompts_per_step": prompts_per_step,
        "max_completion_length": max_completion_length, "steps": len(step_times),
        "micro_batch": micro_batch, "median_step_s": round(median_step, 2),
        "episodes_per_s": round(prompts_per_step * num_generations / median_step, 2) if median_step else None,
        "generation_s_per_step": round(generation_per_step, 2),
        "generation_share": round(generation_per_step / median_step, 3) if median_step else None,
        "environment_s_per_step": round(env_seconds / max(1, len(step_times)), 4),
        "environment_share": round(env_seconds / max(1e-9, sum(step_times)), 4),
        "tool_calls_per_step": round((profile.env_calls - env_before[1]) / max(1, len(step_times)), 2),
        "generation_calls_per_step": round(len(warm) / warm_steps, 2),
        "generated_tokens_per_s": round(sum(call["new_tokens_sum"] for call in warm)
                                        / max(1e-9, sum(call["seconds"] for call in warm)), 1),
        "decode_steps_per_s": round(sum(call["new_tokens_max"] for call in warm)
                                    / max(1e-9, sum(call["seconds"] for call in warm)), 1),
        # rows x decode steps of every call against the tokens kept: rows that ended their turn still ride along
        "ended_row_share": round(1 - sum(call["new_tokens_sum"] for call in warm)
                                 / max(1, sum(call["batch"] * call["new_tokens_max"] for call in warm)), 3),
        "mean_completion_tokens": round(statistics.fmean(
            entry["completions/mean_length"] for entry in history if "completions/mean_length" in entry), 1),
        "reward_mean": round(statistics.fmean(entry["reward"] for entry in history if "reward" in entry), 3),
        **phase_summary(warm, warm_steps),
        "reserved_growth_gib_per_step": reserved_growth_per_step(history),
        "graph_captures_per_step": graph_captures_per_step(profile.calls),
        "calls": profile.calls,
    }
    alignment = sampling_alignment(history)  # vLLM's rollouts against the trainer's scores; None without vLLM
    if alignment is not None:
        row["sampling_alignment"] = alignment
        row["importance_sampling_ratio"] = alignment.get("importance_sampling_ratio")
    # The single-turn reference and the graphs check time the native generate; under vLLM they would time vLLM.
    if profile.trainer is not None and not uses_vllm(variant):
        row["single_turn"] = single_turn_reference(profile.trainer, num_generations * prompts_per_step,
                                                   min(256, max_completion_length))
        row["tool_loop_vs_single_turn"] = round(row["generated_tokens_per_s"] / row["single_turn"]["tokens_per_s"], 3)
        if backend == "unsloth" and "graphs" in variant and torch.cuda.is_available():
            row["greedy_graphs_check"] = greedy_graphs_check(profile.trainer)
    if torch.cuda.is_available():
        row["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        row["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
        row["allocated_before_gib"] = round(allocated_before, 2)  # an earlier variant's leftovers, inside the peaks
    return row


def graph_captures_per_step(calls: list[dict[str, Any]]) -> float | None:
    """Unsloth's decode-graph captures a step after the first (its counter is cumulative over the calls): one per
    generate call when every call captures again (2026-12-06f); None where the model keeps no counter."""
    counted = [call for call in calls if "captures" in call]
    warm = [call for call in counted if call["step"] >= 1]
    if not warm:
        return None
    before = max((call["captures"] for call in counted if call["step"] < 1), default=0)
    steps = len({call["step"] for call in warm})
    return round((warm[-1]["captures"] - before) / steps, 2)


def reserved_growth_per_step(history: list[dict[str, Any]]) -> float | None:
    """How much the peak reserved memory grew a step after the first (GiB): memory the allocator keeps cached, e.g.
    the pools of decode graphs dropped and captured again every call (2026-12-06f: +0.19 GiB a step for 30 steps
    while the peak allocated stayed flat). None without two steps' GPU figures."""
    peaks = [entry["gpu/peak_reserved_gib"] for entry in history
             if "step_time" in entry and "gpu/peak_reserved_gib" in entry]
    return round((peaks[-1] - peaks[0]) / (len(peaks) - 1), 3) if len(peaks) >= 2 else None


def phase_summary(calls: list[dict[str, Any]], steps: int) -> dict[str, float]:
    """Per step, the generation calls' setup, prefill, decode and teardown seconds; and what a call costs before
    its first decode step and after its last (the fixed part), and a decode step's milliseconds."""
    split = [call for call in calls if "forwards" in call]
    if not split:
        return {}
    per_step = {f"{phase}_s_per_step": round(sum(call[f"{phase}_s"] for call in split) / steps, 3)
                for phase in ("setup", "prefill", "decode", "teardown")}
    decode_steps = sum(call["forwards"] - 1 for call in split)
    return {**per_step,
            "call_fixed_s": round(statistics.fmean(call["setup_s"] + call["prefill_s"] + call["teardown_s"]
                                                   for call in split), 3),
            "decode_ms_per_step": round(1000 * sum(call["decode_s"] for call in split) / decode_steps, 2)
            if decode_steps else None}


def stream_child(command: list[str], timeout_s: float, label: str) -> tuple[list[str], bool]:
    """Run ``command`` (stderr into stdout), passing its lines through as they come, prefixed ``  [label]``, so that
    a log watched during a long run, or cut off by a GPU session's time limit, shows how far it got (a 1.7B child
    held its output for 7 minutes). Returns its lines and whether it was killed at ``timeout_s``."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO_DIR,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        child.kill()

    watchdog = threading.Timer(timeout_s, kill)
    watchdog.start()
    output: list[str] = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            output.append(line)
            print(f"  [{label}] {line}", end="", flush=True)
        child.wait()
    finally:
        watchdog.cancel()
    return output, killed.is_set()


def run_child(backend: str, arguments: argparse.Namespace, variants: list[str], num_generations: int,
              length: int) -> list[dict[str, Any]]:
    """The variants of one backend in a fresh Python process; a crash becomes a row saying so."""
    command = [sys.executable, __file__, "--child", backend, "--model", arguments.model, "--steps",
               str(arguments.steps), "--num-generations", str(num_generations), "--max-completion-length",
               str(length), "--prompts-per-step", *map(str, arguments.prompts_per_step), "--variants", *variants]
    if arguments.micro_batch:
        command += ["--micro-batch", str(arguments.micro_batch)]
    if arguments.data_dir:
        command += ["--data-dir", arguments.data_dir]
    if arguments.start_adapter:
        command += ["--start-adapter", arguments.start_adapter]
    if backend == "transformers":
        command += ["--backend", "transformers"]  # seen by train.py at import: keeps Unsloth out
    started = time.time()
    output, timed_out = stream_child(command, arguments.timeout_s, label=backend)
    if timed_out:
        return [{"backend": backend, "variant": ",".join(variants), "error": f"timed out after {arguments.timeout_s} s"}]
    rows = [json.loads(line[len("BENCH_RESULT "):]) for line in output if line.startswith("BENCH_RESULT ")]
    for row in rows:
        row["process_wall_s"] = round(time.time() - started, 1)
    if not rows:
        tail = "".join(output)[-3000:]
        error = "out of memory" if "OutOfMemory" in tail or "out of memory" in tail else f"failed: {tail}"
        rows = [{"backend": backend, "variant": ",".join(variants), "num_generations": num_generations,
                 "max_completion_length": length, "error": error}]
    return rows


TABLE_COLUMNS = ["backend", "variant", "prompts_per_step", "num_generations", "max_completion_length", "median_step_s",
                 "episodes_per_s", "ended_row_share",
                 "generation_share", "generated_tokens_per_s", "decode_steps_per_s", "tool_loop_vs_single_turn",
                 "generation_calls_per_step", "call_fixed_s", "decode_ms_per_step", "tool_calls_per_step",
                 "mean_completion_tokens", "environment_share", "reward_mean", "importance_sampling_ratio",
                 "graph_captures_per_step", "peak_reserved_gib", "reserved_growth_gib_per_step", "allocated_before_gib",
                 "error"]


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| " + " | ".join(TABLE_COLUMNS) + " |")
    print("|" + "---|" * len(TABLE_COLUMNS))
    for row in rows:
        print("| " + " | ".join(str(row.get(column, "")) for column in TABLE_COLUMNS) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="local model folder (python models.py fetch / random)")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps per variant (the first is warm-up)")
    parser.add_argument("--backends", nargs="+", default=["unsloth", "transformers"])
    parser.add_argument("--variants", nargs="+", default=["stop+graphs"], choices=list(VARIANTS))
    parser.add_argument("--transformers-variants", nargs="+", default=None, choices=list(VARIANTS),
                        help="variants for the plain backend (default: --variants)")
    parser.add_argument("--num-generations", type=int, default=6)
    parser.add_argument("--max-completion-length", type=int, default=512)
    parser.add_argument("--prompts-per-step", type=int, nargs="+", default=[1],
                        help="prompt groups a step (the learning proof takes 4: 24 episodes with 6 generations); "
                             "several: each variant at each, in one process")
    parser.add_argument("--micro-batch", type=int, default=None,
                        help="completions a training micro-batch (default: the step's prompt groups, one micro-batch "
                             "per generation); the step still generates all its episodes in one batch")
    parser.add_argument("--data-dir", default=None, help="Spider-format folder (default: the built-in data)")
    parser.add_argument("--start-adapter", default=None,
                        help="a warm-up adapter (train.py --phase sft) to start from: its model calls tools")
    parser.add_argument("--memory-search", action="store_true", help="try larger settings against the budget")
    parser.add_argument("--memory-budget-gib", type=float, default=22.5, help="an L4's usable memory by default")
    parser.add_argument("--timeout-s", type=int, default=900)
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--backend", default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args()

    if arguments.child:
        for variant in arguments.variants:
            for prompts in arguments.prompts_per_step:
                try:
                    row = measure_variant(arguments.child, arguments.model, variant, arguments.steps,
                                          arguments.num_generations, arguments.max_completion_length,
                                          arguments.data_dir, arguments.start_adapter, prompts, arguments.micro_batch)
                except Exception as error:  # one failing variant must not hide the others' numbers
                    row = {"backend": arguments.child, "variant": variant, "prompts_per_step": prompts,
                           "error": f"{type(error).__name__}: {error}"}
                print("BENCH_RESULT " + json.dumps(row), flush=True)
        return
    if not Path(arguments.model).is_dir():
        parser.error(f"--model {arguments.model} is not a folder; make one with: python models.py fetch NAME --out DIR "
                     "(or python models.py random --size 1.7b --out DIR)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows: list[dict[str, Any]] = []
    for backend in arguments.backends:
        variants = arguments.variants
        if backend == "transformers" and arguments.transformers_variants:
            variants = arguments.transformers_variants
        rows += run_child(backend, arguments, variants, arguments.num_generations, arguments.max_completion_length)
        if arguments.out:  # after every backend, so a later crash or time limit loses nothing measured
            arguments.out.write_text(json.dumps(rows, indent=2))
    print_table(rows)
    by_key = {(row["backend"], row.get("variant")): row for row in rows if "error" not in row}
    for variant in arguments.variants:
        fast, plain = by_key.get(("unsloth", variant)), by_key.get(("transformers", variant))
        if fast and plain:
            print(f"\n{variant}: plain TRL step time / Unsloth step time = "
                  f"{plain['median_step_s'] / fast['median_step_s']:.2f}x")
    fastest = {backend: min((row for row in by_key.values() if row["backend"] == backend),
                            key=lambda row: row["median_step_s"], default=None) for backend in ("unsloth", "transformers")}
    if fastest["unsloth"] and fastest["transformers"]:
        fast, plain = fastest["unsloth"], fastest["transformers"]
        print(f"\nfastest of each: plain TRL ({plain['variant']}) {plain['median_step_s']} s / Unsloth "
              f"({fast['variant']}) {fast['median_step_s']} s = {plain['median_step_s'] / fast['median_step_s']:.2f}x")
    if arguments.memory_search:
        search_rows = []
        for backend in arguments.backends:
            for length in MEMORY_SEARCH_COMPLETION_LENGTHS:
                for generations in MEMORY_SEARCH_GENERATIONS:
                    arguments.steps = 2
                    (row,) = run_child(backend, arguments, arguments.variants[:1], generations, length)[:1]
                    row["fits_budget"] = "error" not in row and row["peak_reserved_gib"] <= arguments.memory_budget_gib
                    search_rows.append(row)
                    if not row["fits_budget"]:
                        break  # larger group sizes only need more memory
        print(f"\nmemory search (budget {arguments.memory_budget_gib} GiB reserved):")
        print_table(search_rows)
        rows += search_rows
    if arguments.out:
        arguments.out.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
