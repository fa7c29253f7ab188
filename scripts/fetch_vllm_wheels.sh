#!/usr/bin/env bash
# vLLM 0.26.0 for the GPU machine (no network there; issue 32): the wheels the GPU image lacks or has in a version
# vLLM's pins rule out, listed in configs/vllm/wheels-0.26.0.txt (resolved against the image's own packages by
# scripts/resolve_vllm_wheels.py: 110 wheels, about 0.9 GB), downloaded here and cut into pieces that one device
# call each carries:
#   bash scripts/fetch_vllm_wheels.sh              # here, once: .vllm/part.NN and .vllm/parts.sha256 (ignored)
#   bash scripts/gpu_session.sh vchunk NN           # there, one call a piece (carry .vllm/part.NN .vllm/parts.sha256)
#   bash scripts/gpu_session.sh vinstall            # there: check, join, pip install offline, import vllm
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
list=${VLLM_WHEEL_LIST:-configs/vllm/wheels-0.26.0.txt}
[ -f "$list" ] || { echo "no wheel list at $list" >&2; exit 2; }
rm -rf .vllm && mkdir -p .vllm/wheels
grep -v '^#' "$list" | sed 's/ *|.*//' | grep -v '^$' > .vllm/requirements.txt
# Wheels of the GPU image's Python (3.12) for any manylinux the image's glibc takes (llguidance 1.7.6 is 2_31 only).
platforms=()
for tag in manylinux_2_39 manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_17 \
           manylinux2014; do platforms+=(--platform "${tag}_x86_64"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  "${platforms[@]}" --platform linux_x86_64 --platform any -d .vllm/wheels -r .vllm/requirements.txt
# Wheels are zip files already: a plain tar, cut into the pieces a warm device call copies in about 3.5 s.
tar cf - -C .vllm wheels requirements.txt | bash scripts/carry_pieces.sh - .vllm
(cd .vllm && sha256sum part.* > parts.sha256)
rm -rf .vllm/wheels
echo "$(wc -l < .vllm/requirements.txt) wheels in $(ls .vllm/part.* | wc -l) pieces of .vllm/ ($(du -sh .vllm | cut -f1))"
