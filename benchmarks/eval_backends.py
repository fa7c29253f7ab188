"""One checkpoint through two of the eval's backends, episode by episode: is the vLLM path the native one?

    python benchmarks/eval_backends.py --checkpoint outputs/sft/adapter --backends transformers vllm --limit 8
    python benchmarks/eval_backends.py --checkpoint /tmp/lp/sft-seed1/sft/adapter --data-dir /tmp/lp/data \\
        --split dev --max-new-tokens 256 --backends unsloth vllm --out backends.json        # a GPU with vLLM
    python benchmarks/eval_backends.py --reports veval-sft-seed1-unsloth.json veval-sft-seed1-vllm.json  # veval's

Each backend plays the same questions greedily through ``python -m eval``'s settings, policy and runner. Printed
per backend: wall time, accuracy, the prefix cache's share of context tokens (vLLM); then how many episodes the
two played identically (the same tool calls with their outputs, final text, stop reason, answer, turns and
generated tokens) and the first that differ. Greedy decoding in two precisions parts on near ties, so compare the
logic at one precision (``--vllm-dtype float32`` against transformers on a CPU); in bfloat16 on a GPU a few
differences are numerics, many are a bug. Without a GPU, vLLM's CPU build runs it: ``bash
scripts/vllm_cpu_check.sh eval CHECKPOINT`` (docs/vllm.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))

# What makes two plays of a question the same episode.
EPISODE_KEYS = ("tool_calls", "final_text", "stop_reason", "answer", "turns", "generated_tokens")


def episode_differences(questions: list[dict[str, Any]], others: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions two reports played differently: question, and each differing key's two values."""
    if [question["question"] for question in questions] != [other["question"] for other in others]:
        raise ValueError("the two reports hold other questions (another split, limit or data folder)")
    differences = []
    for question, other in zip(questions, others, strict=True):
        differing = {key: [question.get(key), other.get(key)] for key in EPISODE_KEYS
                     if question.get(key) != other.get(key)}
        if differing:
            differences.append({"question": question["question"], **differing})
    return differences


def run_backend(backend: str, arguments: argparse.Namespace) -> dict[str, Any]:
    """The eval of one backend (``python -m eval``'s settings, policy and runner); its report, without files."""
    from eval.evaluate import EvalSettings, build_policy, evaluate, load_questions
    from eval.vllm_policy import load_vllm_policy

    settings = EvalSettings(checkpoint=arguments.checkpoint, data_dir=arguments.data_dir, split=arguments.split,
                            limit=arguments.limit, max_new_tokens=arguments.max_new_tokens, backend=backend,
                            progress=False)
    started = time.perf_counter()
    if backend == "vllm" and arguments.vllm_dtype != "auto":
        policy = load_vllm_policy(settings.checkpoint, base_model=settings.base_model,
                                  max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
                                  seed=settings.seed, name=settings.name, dtype=arguments.vllm_dtype)
    else:
        policy = build_policy(settings)
    report = evaluate(settings, load_questions(settings), policy)
    report["timing"]["wall_s"] = round(time.perf_counter() - started, 1)  # model loading included
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", type=Path)
    source.add_argument("--reports", type=Path, nargs=2, metavar=("REPORT", "OTHER"),
                        help="compare two report.json files already written (gpu_session.sh veval writes them)")
    parser.add_argument("--backends", nargs=2, default=["transformers", "vllm"], metavar=("BACKEND", "OTHER"))
    parser.add_argument("--data-dir", type=Path, default=REPO_DIR / "data" / "builtin")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--vllm-dtype", default="auto",
                        help="vLLM's dtype: float32 compares the engines' logic apart from bfloat16's numerics "
                             "(auto runs a float32 folder in bfloat16, where transformers on a CPU runs float32)")
    parser.add_argument("--out", type=Path, default=None, help="a JSON file for the figures and the differences")
    arguments = parser.parse_args(argv)
    if arguments.reports:
        reports = {str(path): json.loads(path.read_text(encoding="utf-8")) for path in arguments.reports}
    else:
        if "unsloth" in arguments.backends:
            from eval.checkpoint import import_unsloth

            import_unsloth()  # before anything loads transformers
        reports = {backend: run_backend(backend, arguments) for backend in arguments.backends}
    first, second = reports.values()
    differences = episode_differences(first["questions"], second["questions"])
    figures = {backend: {"wall_s": report["timing"].get("wall_s"), "eval_s": report["timing"]["elapsed_s"],
                         "accuracy": report["by_hardness"]["overall"]["accuracy"],
                         "prefix_cache_hit_rate": report["timing"].get("generation", {}).get("prefix_cache_hit_rate")}
               for backend, report in reports.items()}
    for backend, numbers in figures.items():
        print(f"{backend}: {numbers}")
    played = len(first["questions"])
    print(f"identical episodes: {played - len(differences)} of {played}")
    for difference in differences[:3]:
        print(json.dumps(difference, ensure_ascii=False)[:600])
    if arguments.out:
        compared = str(arguments.checkpoint) if arguments.checkpoint else [str(path) for path in arguments.reports]
        arguments.out.write_text(json.dumps({"compared": compared, "figures": figures, "questions": played,
                                             "differences": differences}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
