"""Evaluate a trained checkpoint or a built-in policy on a Spider-format split, and write a report.

    python -m eval --checkpoint outputs/easy/adapter                      # built-in dev split, greedy
    python -m eval --checkpoint outputs/mixed/adapter --data-dir ../spider --split dev --out eval_out/mixed
    python -m eval --policy oracle --data-dir ../shared/spider --split train --out /tmp/oracle_spider
    python -m eval --policy random --hardness easy medium --limit 50

Writes OUT/report.json, OUT/report.md, OUT/by_hardness.png, and OUT/gold.sql + OUT/pred.sql for
Spider's official evaluation scripts; prints the by-hardness table. On a CUDA machine with unsloth
installed a checkpoint runs on Unsloth's fast generation with up to 512 episodes in flight, each turn's
generation split into as few calls as the GPU's free memory allows, in two rounds (--backend, --batch-size
and --generation choose otherwise); elsewhere on plain transformers, 16 at a time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from dataclasses import fields
from pathlib import Path

import library_noise

library_noise.silence()  # before the libraries load: some of their notices come at import time

from eval.checkpoint import import_unsloth  # noqa: E402

# Nothing imported here loads transformers, so --backend unsloth can still import unsloth before it.
from eval.evaluate import BACKENDS, GENERATION_MODES, EvalSettings, build_policy, default_backend, evaluate, load_questions  # noqa: E402
from eval.report import markdown_table, write_report  # noqa: E402
from eval.runner import BatchPolicy  # noqa: E402
from policies import SCRIPTED_POLICIES, Policy  # noqa: E402
from spider_data import SPLIT_FILES  # noqa: E402
from sql_structure import Hardness  # noqa: E402

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def build_parser() -> argparse.ArgumentParser:
    help_of = {item.name: item.metadata["help"] for item in fields(EvalSettings)}
    # Every flag takes both spellings (--data-dir and --data_dir), as train.py's do.
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", type=Path, help=help_of["checkpoint"])
    source.add_argument("--policy", choices=list(SCRIPTED_POLICIES), help=help_of["policy"])
    parser.add_argument("--data-dir", "--data_dir", type=Path, default=EvalSettings.data_dir, help=help_of["data_dir"])
    parser.add_argument("--split", choices=list(SPLIT_FILES), default=EvalSettings.split, help=help_of["split"])
    parser.add_argument("--out", type=Path, help=help_of["out"])
    parser.add_argument("--limit", type=int, help=help_of["limit"])
    parser.add_argument("--hardness", nargs="+", choices=[hardness.value for hardness in Hardness],
                        help=help_of["hardness"])
    parser.add_argument("--step-budget", "--step_budget", type=int, default=EvalSettings.step_budget, help=help_of["step_budget"])
    parser.add_argument("--batch-size", "--batch_size", type=int, default=None, help=help_of["batch_size"])
    parser.add_argument("--max-new-tokens", "--max_new_tokens", type=int, default=EvalSettings.max_new_tokens,
                        help=help_of["max_new_tokens"])
    parser.add_argument("--temperature", type=float, default=EvalSettings.temperature, help=help_of["temperature"])
    parser.add_argument("--seed", type=int, default=EvalSettings.seed, help=help_of["seed"])
    parser.add_argument("--base-model", "--base_model", help=help_of["base_model"])
    parser.add_argument("--backend", choices=BACKENDS, default=None, help=help_of["backend"])
    parser.add_argument("--generation", choices=GENERATION_MODES, default=EvalSettings.generation,
                        help=help_of["generation"])
    parser.add_argument("--first-round-tokens", "--first_round_tokens", type=int,
                        default=EvalSettings.first_round_tokens, help=help_of["first_round_tokens"])
    parser.add_argument("--no-grouped-decode-attention", "--no_grouped_decode_attention",
                        dest="grouped_decode_attention", action="store_false", help=help_of["grouped_decode_attention"])
    parser.add_argument("--no-progress", "--no_progress", dest="progress", action="store_false",
                        help="Hide progress bars (a plain progress line every 30 s instead, for logs).")
    return parser


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


def run(argv: list[str] | None = None, *, policy: Policy | BatchPolicy | None = None) -> Policy | BatchPolicy:
    """main's work; returns the policy it played, so that a caller can play another split with it. ``policy``:
    one already built for the same checkpoint and settings (the learning proof evaluates two splits with one
    loaded model), used instead of loading it again."""
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if (arguments.backend or default_backend()) == "unsloth" and arguments.checkpoint is not None and policy is None:
        if importlib.util.find_spec("unsloth") is None:
            parser.error("--backend unsloth needs the unsloth package (see requirements-unsloth.txt) and a CUDA GPU")
        import_unsloth()

    # Bad input (paths, names, numbers, a checkpoint that will not load) is a usage error, not a traceback.
    try:
        given = {key: value for key, value in vars(arguments).items() if value is not None or key in ("checkpoint", "policy")}
        settings = EvalSettings(**given)
        split = load_questions(settings)
        policy = policy if policy is not None else build_policy(settings)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    print(split.summary(), file=sys.stderr)
    report = evaluate(settings, split, policy)
    files = write_report(report, settings.out_dir)
    print(f"\n{settings.to_dict()['policy']} on the {settings.split} split of {settings.data_dir}:\n")
    print(markdown_table(report["by_hardness"]))
    print(f"\n{report['timing']['elapsed_s']:.1f} s; report in {files['report.md']}")
    for path in files.values():
        print(f"  {path}")
    return policy


if __name__ == "__main__":
    sys.exit(main())
