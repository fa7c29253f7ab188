"""Evaluation's generation modes side by side, one model loaded once: seconds, decode work and outcomes.

    python benchmarks/eval_generation.py --checkpoint /tmp/lp/sft-seed1/sft/adapter --data-dir /tmp/lp/data \\
        --split dev --max-new-tokens 256 --modes padded rounds --out evalgen.json        # a GPU, Unsloth
    python benchmarks/eval_generation.py --checkpoint /tmp/qc --limit 16 --max-new-tokens 256 # a CPU, built-in dev

Each mode plays the same questions with the same loaded model (``python -m eval``'s path: EvalSettings,
ModelPolicy, the runner); only how a turn is generated differs (``--generation`` of ``python -m eval``).
A warm-up of one batch runs first, so that no mode pays the process's first compilation. Per mode it
prints the wall time, the generate calls, the decode steps, the row-steps (rows x decode steps of the
padded calls: the decode work, the same on any hardware), the share of those spent on rows that had
already ended, accuracy, and whether every question was played exactly as in the first mode (greedy
decoding: the same tool calls, stop reasons and scores). ``continuous`` needs ``--backend transformers``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
sys.path.insert(1, str(REPO_DIR / "experiments"))  # learning_proof's record of an eval, and its sibling modules

from eval.checkpoint import import_unsloth  # noqa: E402
from eval.evaluate import (  # noqa: E402
    GENERATION_MODES,
    EvalSettings,
    default_backend,
    generation_options,
)

WARM_UP_QUESTIONS = 4


def configure(policy: Any, mode: str, first_round_tokens: int) -> None:
    """Switch a loaded ModelPolicy to one generation mode, as build_policy sets it from --generation."""
    for name, value in generation_options(mode, first_round_tokens).items():
        setattr(policy, name, value)


def differences(report: dict[str, Any], reference: dict[str, Any]) -> dict[str, int]:
    """Questions played otherwise than in the reference run (tool calls, answer, stop reason, score, turns or
    tokens), and of those, the ones scored otherwise. On a GPU, bf16 kernels are not batch-invariant, so a row
    decoded beside other rows can pick another greedy token now and then; on CPU the modes play the same."""
    keys = ("tool_calls", "answer", "stop_reason", "correct", "turns", "generated_tokens")
    pairs = list(zip(report["questions"], reference["questions"], strict=True))
    played_otherwise = [(q, r) for q, r in pairs if any(q.get(key) != r.get(key) for key in keys)]
    return {"episodes_played_otherwise": len(played_otherwise),
            "scored_otherwise": sum(q.get("correct") != r.get("correct") for q, r in played_otherwise)}


def run(settings: EvalSettings, modes: list[str]) -> dict[str, Any]:
    from learning_proof import summarize

    from eval.evaluate import build_policy, evaluate, load_questions

    policy = build_policy(settings)
    split = load_questions(settings)
    warm_up = replace(settings, limit=WARM_UP_QUESTIONS)
    configure(policy, modes[0], settings.first_round_tokens)
    evaluate(warm_up, load_questions(warm_up), policy)
    results: dict[str, Any] = {}
    reference = None
    for mode in modes:
        configure(policy, mode, settings.first_round_tokens)
        started = time.perf_counter()
        report = evaluate(settings, split, policy)
        seconds = time.perf_counter() - started
        generation = report["timing"].get("generation", {})
        overall = report["by_hardness"]["overall"]
        reference = reference or report
        changed = differences(report, reference)
        results[mode] = {
            "seconds": round(seconds, 2),
            "questions": overall["n"],
            "accuracy": overall["accuracy"],
            "played_as_first_mode": changed["episodes_played_otherwise"] == 0,
            **changed,
            **{key: generation.get(key) for key in ("calls", "decode_steps", "row_steps", "new_tokens",
                                                     "idle_decode_share", "slowest_calls")},
            # the learning proof's record of an eval (outcomes question by question, stop reasons, wrong-answer
            # kinds): `learning_proof.py --add-heldout RUN THIS_FILE` makes it a run's held-out eval
            "summary": summarize(report),
        }
        row = results[mode]
        print(f"{mode:>10}: {row['seconds']:8.1f} s, {row['calls']} calls, {row['decode_steps']} decode steps, "
              f"{row['row_steps']} row-steps, idle {row['idle_decode_share']}, accuracy {row['accuracy']:.3f}, "
              f"played otherwise than {modes[0]}: {row['episodes_played_otherwise']} episodes "
              f"({row['scored_otherwise']} scored otherwise)", flush=True)
    first = results[modes[0]]["seconds"]
    for mode in modes[1:]:
        print(f"{mode} / {modes[0]}: {results[mode]['seconds'] / first:.2f}x the time")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=EvalSettings.data_dir)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--max-new-tokens", type=int, default=EvalSettings.max_new_tokens)
    parser.add_argument("--first-round-tokens", type=int, default=EvalSettings.first_round_tokens)
    parser.add_argument("--backend", choices=("transformers", "unsloth"))
    parser.add_argument("--modes", nargs="+", choices=GENERATION_MODES, default=["padded", "rounds"])
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    arguments = parser.parse_args(argv)
    backend = arguments.backend or default_backend()
    if "continuous" in arguments.modes and backend == "unsloth":
        parser.error("--modes continuous runs on transformers' own attention: add --backend transformers")
    if backend == "unsloth":
        import_unsloth()
    given = {"batch_size": arguments.batch_size} if arguments.batch_size else {}
    try:
        settings = EvalSettings(checkpoint=arguments.checkpoint, data_dir=arguments.data_dir, split=arguments.split,
                                limit=arguments.limit, max_new_tokens=arguments.max_new_tokens, backend=backend,
                                first_round_tokens=arguments.first_round_tokens, progress=False, **given)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    results = run(settings, arguments.modes)
    if arguments.out:
        arguments.out.write_text(json.dumps({"settings": settings.to_dict(), "modes": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
