"""train.py's command line: this project's settings and TRL's GRPOConfig in one parser, --help in four groups.

    agent, grpo, explicit = parse_config(argv, AgentConfig, AgentGRPOConfig, GRPO_DEFAULTS, WarmupGRPOConfig)
    parser = build_parser(AgentConfig, AgentGRPOConfig, GRPO_DEFAULTS)      # what --help prints

The settings themselves (the dataclasses and train.py's defaults for TRL's flags) are declared in train.py, where a
newcomer looks for them; this module only reads them. ``explicit`` names what the user chose, on the command line
or in the --config file: embedded mode and the phase's epochs never override those. TRL's flags are read into the
GRPO settings for a GRPO phase and into the warm-up's (the same fields, without GRPO's batch checks) for --phase sft.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from trl import TrlParser

from config_file import check_config_file, config_file_keys, config_file_settings
from sft import PHASE_NAME as WARMUP_PHASE
from sft import WarmupConfig

USAGE = "python train.py [--config RUN.YAML] [--flag value ...]"

HELP_DESCRIPTION = ("Trains one curriculum phase (--phase) with GRPO, or the supervised warm-up (--phase sft). The "
                    "flags come in four groups below: this project's settings, the warm-up's, experiment switches and "
                    "TRL's GRPOConfig. A yes/no flag takes true or false (--no_FLAG is the same as --FLAG false).")

# Switches the experiments and benchmarks turn (ablations, speed comparisons); a training run leaves them as they are.
EXPERIMENT_SWITCHES = ("stop_at_tool_call", "cap_turns_at_budget", "decode_graphs", "grouped_decode_attention",
                       "generation_mode_per_rollout", "sft_never_stop_share",
                       "sft_retry_share", "skip_warmup_questions")


def build_parser(agent_settings: type, grpo_settings: type, grpo_defaults: dict[str, Any]) -> TrlParser:
    """Our flags and TRL's in one parser. TrlParser reads --config itself, before the flags; it is declared
    here too so that --help lists it. --help lists this project's settings first, then the warm-up's, the
    experiment switches and TRL's GRPOConfig, each under its own heading."""
    parser = TrlParser((agent_settings, grpo_settings), usage=USAGE, description=HELP_DESCRIPTION)
    parser.set_defaults(**grpo_defaults)
    config = parser.add_argument("--config", metavar="RUN.YAML",
                                 help="A YAML file of `flag: value` lines (flags as below, with underscores); flags "
                                      "given on the command line win over it.")
    parser._optionals._group_actions.remove(config)
    parser._optionals._group_actions.insert(1, config)  # listed after --help, before the settings it can give
    # argparse prints its usage before a flag's error: here every flag, some 200 lines, which hide the error.
    parser.format_usage = lambda: f"usage: {USAGE} (--help lists them)\n"
    parser._optionals.title = "this project's settings"
    for action in parser._actions:  # a yes/no flag's --no_ twin repeats its help word for word: said once above
        if action.option_strings and action.option_strings[0] == f"--no_{action.dest}":
            action.help = argparse.SUPPRESS
    warmup_flags = {item.name for item in dataclasses.fields(WarmupConfig)} - set(EXPERIMENT_SWITCHES)
    list_apart(parser, "the warm-up (--phase sft)", warmup_flags)
    list_apart(parser, "experiment switches (ablations and benchmarks; leave them for training runs)",
               set(EXPERIMENT_SWITCHES))
    agent_flags = {item.name for item in dataclasses.fields(agent_settings)} | {"help", "config"}
    list_apart(parser, "TRL's GRPOConfig (TRL's names and meanings; some defaults are train.py's own)",
               {action.dest for action in parser._actions} - agent_flags)
    return parser


def list_apart(parser: TrlParser, title: str, names: set[str]) -> None:
    """Show these flags under their own heading in --help, after the others (they parse as before)."""
    group = parser.add_argument_group(title)
    for action in parser._actions:
        if action.dest in names:
            for other in parser._action_groups:
                if action in other._group_actions:
                    other._group_actions.remove(action)
            group._group_actions.append(action)


def parse_config(argv: list[str], agent_settings: type, grpo_settings: type, grpo_defaults: dict[str, Any],
                 warmup_grpo_settings: type) -> tuple[Any, Any, set[str]]:
    """Parse our flags and TRL's together (TrlParser also reads --config YAML); returns both settings objects and
    the names the user chose. TRL's flags become ``grpo_settings``, or ``warmup_grpo_settings`` for --phase sft:
    the warm-up forms no GRPO groups, so GRPO's batch checks must not refuse its micro-batch."""
    argv = _rewrite_push_to_hub(argv)
    parser = build_parser(agent_settings, grpo_settings, grpo_defaults)
    check_config_file(parser, argv, (agent_settings, grpo_settings))
    if requested_phase(parser, argv) == WARMUP_PHASE:
        parser = build_parser(agent_settings, warmup_grpo_settings, grpo_defaults)
    agent, grpo, *_ = parser.parse_args_and_config(list(argv))  # *_: the namespace that holds --config
    # What the user chose: flags on the command line and keys of the --config file. Embedded mode and
    # the phase's epochs never override these.
    explicit = {arg.lstrip("-").replace("-", "_").split("=")[0] for arg in argv if arg.startswith("--")}
    explicit |= set(config_file_keys(argv))
    explicit.discard("config")
    return agent, grpo, explicit


def requested_phase(parser: TrlParser, argv: list[str]) -> str:
    """The --phase asked for, read before the settings are built: the command line's, else the --config file's, else
    the default. Read by the parser itself (so `--phase=sft` counts too); a flag it cannot read stops it here with
    the message the full parse would give."""
    in_file = {key: value for key, value in config_file_settings(argv).items() if key == "phase"}
    # argparse fills in a default only where the namespace has no value: the file's phase wins over the default,
    # the command line's over both.
    return parser.parse_known_args(argv, argparse.Namespace(**in_file))[0].phase


def _rewrite_push_to_hub(argv: list[str]) -> list[str]:
    # TRL's GRPOConfig owns --push_to_hub as a yes/no flag; ours takes a repo name, so `--push-to-hub REPO`
    # is read as --hub_repo REPO (and TRL's trainer.push_to_hub stays off: model.push_to_hub is used).
    rewritten = list(argv)
    for index, arg in enumerate(rewritten[:-1]):
        if arg in ("--push-to-hub", "--push_to_hub") and not rewritten[index + 1].startswith("--"):
            if rewritten[index + 1].lower() not in ("true", "false"):
                rewritten[index] = "--hub_repo"
    return rewritten
