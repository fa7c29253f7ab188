"""Scoring a policy or a trained checkpoint on Spider-format questions, and the gates a checkpoint must pass.

    python -m eval --policy oracle --limit 20                          # the built-in dev split
    python -m eval --checkpoint outputs/easy/adapter --out eval_out/easy
    EVAL_CHECKPOINT=outputs/easy/adapter pytest eval/                  # gate a checkpoint

Modules, one job each: ``runner`` plays every question through ``SQLEnv`` and records it;
``model_policy`` turns a language model into a policy (batched generation, tool-call parsing);
``checkpoint`` loads what training saved (a PEFT adapter or a full model, transformers or Unsloth);
``metrics`` reduces records to per-hardness numbers; ``report`` writes report.json, report.md,
the chart and Spider's gold.sql/pred.sql; ``evaluate`` runs the whole thing from settings;
``gates`` reads the reviewed thresholds in ``gates.toml``; ``__main__`` is the command line.
"""
