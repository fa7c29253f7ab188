#!/usr/bin/env bash
# One stage of a GPU session on the lent H200 (no network there; see docs/gpu.md). Run from the repo
# root there, one stage per device call, back to back (the machine keeps /tmp only while it stays warm):
#   setup          carry .whl .spider.tgz: install the wheels, unpack Spider into /tmp/spider (a model piece no longer
#                  fits beside them: a call carries the tracked tree too, 10.8 MB on 2026-12-07, and 64 MiB in all)
#   chunk NN       carry .m/part.NN: one piece of the Qwen2.5-Coder-0.5B GGUF into /tmp/m
#   convert        join and convert the GGUF into /tmp/qc (every later stage does it when it is missing)
#   chunk15 NN     carry .m15/part.NN: one piece of the Qwen2.5-Coder-1.5B GGUF into /tmp/m15 (22 pieces, 00..21;
#                  here: bash scripts/prepare_gpu_carry.sh 1.5b)
#   convert15      join and convert the 1.5B into /tmp/q15 (on the machine's 16 cores)
#   MODEL=random1.7b  (environment) a random-weight model of Qwen3-1.7B's shape, built there (no carry): for memory
#                  and for a first run of new code under Unsloth (phase)
#   MODEL=1.5b     (environment) proof, start, bench and eval-modes use the 1.5B (/tmp/q15, converted first when
#                  missing) and its own work folder /tmp/lp/q15 (adapters /tmp/lp/q15/ARM-seedN/PHASE/adapter);
#                  here, merge its runs into their own results: --results docs/learning_proof_1.5b/results.json
#                  --report docs/learning_proof_1.5b.md (learning_proof.py refuses to pool two models)
#   RUNS_DIR       (environment) where background runs keep logs, pids, results and work folders (/tmp/lp)
#   vchunk NN      carry .vllm/part.NN .vllm/parts.sha256: one piece of the vLLM 0.26.0 wheels into /tmp/v
#                  (here: bash scripts/fetch_vllm_wheels.sh writes them; 18 pieces since 2026-12-06b)
#   vinstall       once every piece is there and matches: unpack, pip install vLLM offline, import it (issue 32)
#   bench          benchmarks/gpu_backends.py, every variant (START_ADAPTER=DIR: from a warm-up, multi-turn;
#                  PROMPTS=4: the learning proof's 24-episode steps; TVARIANTS: plain TRL's variants;
#                  BENCH_OUT=NAME: NAME.json and NAME.log, so two benches in one session keep both; MICRO_BATCH,
#                  MAX_LEN: train.py's micro-batch and completion length, e.g. the L4 step of the real 1.5B: MODEL=1.5b
#                  PROMPTS=16 MICRO_BATCH=6 MAX_LEN=1024 START_ADAPTER=<its warm-up> DATA_DIR=/tmp/lp/q15/data;
#                  VARIANTS=vllm BENCH_OUT=vllm_step: the same step's rollouts through vLLM, after vinstall)
#   decode ARGS...  benchmarks/decode_step.py ARGS (a decode step's cost by batch and attention core; --lora attached
#                  folded: with the adapter's products and from the folded weights, as train.py's rollouts decode);
#                  figures to $OUT
#   memory17 N...  a random-weight 1.7B (Qwen3-1.7B's shape) in /tmp/q17, one GRPO step's peak memory at N prompt groups
#                  a step (6 x 1024 tokens each, micro-batch 6): which default fits the L4's 22.5 GiB; figures to $OUT.
#                  VARIANTS: the settings (default: train.py's, the LoRA folded for the rollouts, without the 256-token
#                  turn cap, so that the random model's one-turn episodes still run to 1024 tokens, the worst case)
#   phase FLAGS... a short train.py phase on the carried model (MODEL) with FLAGS, e.g. a new lever's first run under
#                  Unsloth: its summary lines and notes printed, its metrics.jsonl to $OUT (phase_metrics.jsonl)
#   bg NAME STAGE ARGS...  any stage in the background as run NAME (a `then` can wait on it); returns at once
#   eval-modes ADAPTER  the held-out eval of one adapter in each generation mode (MODES, default "padded rounds"),
#                  one after the other in one process (benchmarks/eval_generation.py); figures to
#                  $OUT/eval-generation-RUN.json (RUN: the adapter's run folder, e.g. sft-seed28); here, an arm the
#                  proof trained only gets it as its held-out eval: learning_proof.py --add-heldout sft/seed28/epoch FILE
#   eval-cores ADAPTER  the held-out eval of ADAPTER with each decode attention core (the grouped one, training's and
#                  now the eval's; then Unsloth's own call, which the eval ran before 2026-12-05d), each its own
#                  process: seconds and accuracy side by side, $OUT/ecore-RUN-CORE.json (report.json) and .log
#   veval ADAPTER  the held-out eval of ADAPTER through vLLM (python -m eval --backend vllm; after vinstall), then
#                  through Unsloth: seconds (the eval's, the process's) and accuracy side by side,
#                  $OUT/veval-RUN-BACKEND.json (report.json); VEVAL_BACKENDS="vllm": vLLM's alone (e.g. beside an
#                  engine setting in the environment, VLLM_USE_FLASHINFER_SAMPLER=0)
#   proof ARMS...  experiments/learning_proof.py --arms ARMS (results accumulate in /tmp/lp)
#   start NAME ARGS...  the same in the background, results in /tmp/lp/results-NAME.json, log NAME.log;
#                  returns at once. Start one and give it every seed (--arms sft easy mixed --seeds 0 1 2: arm
#                  by arm, one GPU process at a time): side by side, three evals ran 3-5x slower each than alone
#   after NAME ADAPTER  in the background, once run NAME ends: the built-in dev eval of ADAPTER, the 1.7B-shaped
#                  6 x 1024 memory step (random weights) and eval-modes of ADAPTER; figures in /tmp/lp/extras
#   then NAMES STAGE ARGS...  in the background, once the runs NAMES ("a b": each of them) end: any stage above (with this call's environment),
#                  its files to /tmp/lp/extras (e.g. START_ADAPTER=DIR bash $0 then line2 bench); it is run
#                  then-STAGE (or AS), which a later `then` can wait on
#   watch SECONDS  wait until the background runs end or SECONDS pass; their progress, results, logs and
#                  per-step metrics to $OUT. Send the watch calls in the same batch as the call that starts the
#                  runs: a machine left idle 30 s between two calls goes back, and the runs with it (2026-12-04)
#   stop NAME      end a background run
#   keep DIR NAME [FIRST]  an adapter folder back to the caller in checksummed pieces, as many as one call returns
#                  (FIRST: the first piece; it prints the next call's FIRST while pieces remain). Here, put them in
#                  .adapters/NAME/ (ignored): to look at an adapter off the GPU, or to bring it back to a machine
#                  started again in the same session. Across sessions only where this checkout's ignored folders
#                  last, which nothing promises: they did through 2026-12-05, and 2026-12-06 began on a new checkout
#                  without them; restore checks every piece (arms to compare still run from one warm-up).
#                  KEEP_WAIT=SECONDS: an arm still training in the background: wait up to SECONDS for its adapter
#                  (whole, unchanged for 10 s), so that it comes back before its eval can outrun the budget
#   restore NAME DEST  with .adapters/NAME's pieces carried (over as many calls as they need: each call adds its
#                  pieces; three of 15 MiB a call, since a call's 64 MiB counts the working tree too), once all
#                  are there and match their checksums, unpack them into DEST
# Here, first: bash scripts/prepare_gpu_carry.sh [1.5b]: the wheels (.whl), Spider (.spider.tgz) and the model's
#   checked GGUF (python models.py gguf) cut into pieces as large as a call carries beside the tree (.m or .m15)
set -euo pipefail
stage=$1; shift
out=${OUT:-/tmp/out}
runs=${RUNS_DIR:-/tmp/lp}  # background runs: their logs, pids, results, work folders and extras
mkdir -p "$out" /tmp/m "$runs"
keep_dir=${KEEP_DIR:-/tmp/keep}  # adapters in pieces, on their way out (keep) or in (restore)
vdir=${VLLM_DIR:-/tmp/v}  # the vLLM wheels' pieces, carried in (vchunk), then unpacked and installed (vinstall)
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
case "${MODEL:-0.5b}" in  # the model that proof, start, bench and eval-modes train or read, and its work folder
  0.5b) model_dir=/tmp/qc work=$runs ;;
  1.5b) model_dir=/tmp/q15 work=$runs/q15 ;;
  random1.7b) model_dir=/tmp/q17 work=$runs/q17 ;;  # random weights in Qwen3-1.7B's shape: nothing to carry
  *) echo "MODEL must be 0.5b (Qwen2.5-Coder-0.5B, the default), 1.5b (Qwen2.5-Coder-1.5B) or random1.7b, not" \
          "'$MODEL'" >&2
     exit 2 ;;
esac
convert() {  # the 0.5B from its GGUF pieces, once per machine
  if [ ! -f /tmp/qc/source.json ]; then
    cat /tmp/m/part.* > /tmp/m/model.gguf
    python3 models.py fetch qwen2.5-coder-0.5b-instruct --gguf /tmp/m/model.gguf --out /tmp/qc --no-progress \
      > "$out/convert.log" 2>&1 && echo "converted /tmp/qc"
  fi
}
convert15() {  # the 1.5B from its 19 pieces, once per machine, timed (issue 30 asks what its conversion costs)
  if [ ! -f /tmp/q15/source.json ]; then
    cat /tmp/m15/part.* > /tmp/m15/model.gguf
    /usr/bin/time -v python3 models.py fetch qwen2.5-coder-1.5b-instruct --gguf /tmp/m15/model.gguf --out /tmp/q15 \
      --no-progress > "$out/convert15.log" 2>&1 && echo "converted /tmp/q15"
  fi
}
random17() {  # the random-weight model of Qwen3-1.7B's shape, once per machine
  [ -f /tmp/q17/config.json ] || python3 models.py random --size 1.7b --out /tmp/q17 > "$out/q17.log" 2>&1
}
prepare_model() {  # the model MODEL names, converted (or built) when this machine has not yet
  case "$model_dir" in
    /tmp/q15) convert15 ;;
    /tmp/q17) random17 ;;
    *) convert ;;
  esac
}
collect() {  # background runs' progress, logs, results and per-step metrics to $OUT
  for log in $runs/*.log; do
    [ -e "$log" ] || continue
    name=$(basename "$log" .log); pid=$(cat "$runs/$name.pid" 2>/dev/null || echo 0)
    state=$(kill -0 "$pid" 2>/dev/null && echo running || echo ended)
    echo "== $name ($state): $(grep -E '^\[proof\] [a-z0-9-]+ seed|Error|error:' "$log" | tail -3 | cut -c1-300 | tr '\n' ' ' || true)"
    grep -E "^\[sft\] tool-call|'reward'|^\[train\] step" "$log" | tail -1 | cut -c1-300 || true
    cp "$log" "$out/"
  done
  for metrics in $runs/*-seed*/*/metrics.jsonl $runs/q15/*-seed*/*/metrics.jsonl; do  # each phase's latest logged step
    [ -e "$metrics" ] && echo "$metrics: $(tail -1 "$metrics" | cut -c1-240)"
  done
  # Every phase's per-step rows, its rollouts (a group's best and worst episode a step), its sampler's question
  # history (each question's groups: right answers of six, reward spread), the --screen_questions eval's outcomes and
  # every held-out eval's episodes (tool calls, SQL, outputs, the text of an unreadable call) come back in one file
  # (the device returns 8 files at most): here, tar xzf <files_at>/metrics.tgz gives <arm>-seed<N>/<phase>/
  # metrics.jsonl, rollouts.jsonl, adapter/question_history.json and screen/report.json, and
  # <arm>-seed<N>/eval-heldout*/report.json (the final adapter's and any --eval-at-step one's).
  # (With nullglob: one pattern matching nothing, e.g. no 1.5B run, must not cost the other's rows.) A file over
  # the device's 16 MiB would not come back at all: then the per-step rows alone.
  (cd "$runs" && shopt -s nullglob && metrics=({.,./q15}/*-seed*/*/metrics.jsonl) && [ ${#metrics[@]} -gt 0 ] &&
    tar czf "$out/metrics.tgz" "${metrics[@]}" {.,./q15}/*-seed*/*/rollouts.jsonl \
      {.,./q15}/*-seed*/*/adapter/question_history.json {.,./q15}/*-seed*/*/screen/report.json \
      {.,./q15}/*-seed*/eval-heldout*/report.json &&
    if [ "$(stat -c %s "$out/metrics.tgz")" -gt $((${METRICS_MAX_BYTES:-15728640})) ]; then
      echo "metrics.tgz: over ${METRICS_MAX_BYTES:-15728640} bytes with the episodes; the per-step rows alone"
      tar czf "$out/metrics.tgz" "${metrics[@]}"
    fi) || true
  cp $runs/results-*.json "$out/" 2>/dev/null || true
  if [ -d $runs/extras ]; then tar czf "$out/extras.tgz" -C $runs extras; fi
}
until_ended() {  # the shell loops that wait while background runs NAMES ("a b") are alive
  local loops=() name
  for name in $1; do loops+=("while kill -0 \$(cat $runs/$name.pid) 2>/dev/null; do sleep 5; done"); done
  local IFS=";"; echo "${loops[*]}"
}
adapter_written() {  # adapter_written DIR SECONDS: wait up to SECONDS until DIR holds a whole adapter, its files
  # unchanged for KEEP_QUIET seconds (a trainer writes the weights, the config and the tokenizer one after another);
  # without a wait, an adapter already saved: its config is there
  local dir=$1 deadline=$((SECONDS + $2)) quiet=${KEEP_QUIET:-10}
  if [ "$2" -eq 0 ]; then [ -f "$dir/adapter_config.json" ]; return; fi
  while true; do
    if [ -f "$dir/adapter_config.json" ] && [ -f "$dir/adapter_model.safetensors" ] \
        && [ -z "$(find "$dir" -newermt "-$quiet seconds" -print -quit)" ]; then
      return 0
    fi
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 1
  done
}

check_pieces() {  # check_pieces DIR SUMS LABEL: every piece SUMS (in DIR) names is there and matches; else say
  # which are missing (exit 0: later calls carry them) or that one is damaged (exit 1)
  local missing
  missing=$(cd "$1" && while read -r _ piece; do [ -f "$piece" ] || echo -n "$piece "; done < "$2")
  if [ -n "$missing" ]; then echo "$3: waiting for $missing"; exit 0; fi
  (cd "$1" && sha256sum --check --quiet "$2") || { echo "$3: a piece is damaged" >&2; exit 1; }
}
heldout_eval() {  # heldout_eval ADAPTER NAME LABEL [FLAGS...]: python -m eval of ADAPTER on the held-out part, its
  # report.json and log to $OUT as NAME.json and NAME.log (an eval writes five files; a call returns 8), then its
  # seconds and overall line after LABEL
  local adapter=$1 name=$2 label=$3 started=$SECONDS
  shift 3
  python3 -m eval --checkpoint "$adapter" --data-dir "$work/data" --split dev --max-new-tokens 256 --no-progress \
    "$@" --out "$runs/$name" > "$out/$name.log" 2>&1 || echo "python -m eval $* exited with $?"
  cp "$runs/$name/report.json" "$out/$name.json" 2>/dev/null || true
  # The eval's own seconds, then the process's: a model's loading, and vLLM's engine start (2026-12-06d: 12 s of
  # eval in a 210 s process)
  echo "$label: $(grep -E "^[0-9.]+ s; report" "$out/$name.log" || tail -3 "$out/$name.log") ($((SECONDS - started)) s process)"
  grep -E "^\| overall" "$out/$name.log" || true
}
queue_behind() {  # queue_behind NAME AS SCRIPT: once run NAME ends, SCRIPT in the background as run AS
  mkdir -p $runs/extras
  setsid nohup bash -c "
    $(until_ended "$1")
    cd $PWD; $3" > "$runs/$2.log" 2>&1 &
  echo $! > "$runs/$2.pid"; echo "queued $2 after $1 (pid $!)"
}
case "$stage" in
  setup)
    bash .whl/install.sh
    tar xzf .spider.tgz -C /tmp
    cp .m/part.* /tmp/m/ 2>/dev/null || true  # a piece of each model's GGUF may ride along (the 0.5B's last one)
    mkdir -p /tmp/m15 && { cp .m15/part.* /tmp/m15/ 2>/dev/null || true; }
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c "import torch, trl, transformers; print(torch.__version__, trl.__version__, transformers.__version__)"
    # The host, for comparing sessions: the same steps ran 1.6-1.7x slower on one H200 than on another (2026-12-03d),
    # in generation (launch-bound, so the CPU counts) and training alike.
    { nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,power.limit,pstate --format=csv
      lscpu | grep -E "^Model name|^CPU\(s\)|MHz" ; } 2>&1 | tee "$out/machine.txt" || true
    # The image's packages: what scripts/resolve_vllm_wheels.py resolves the vLLM carry against
    # (configs/vllm/gpu_image_packages.txt; a changed image wants the carry resolved again).
    python3 -m pip list --format=freeze > "$out/image_packages.txt" 2>/dev/null || true
    cmp -s "$out/image_packages.txt" configs/vllm/gpu_image_packages.txt ||
      echo "the image's packages differ from configs/vllm/gpu_image_packages.txt (the vLLM carry was resolved there)"
    ;;
  chunk)
    cp ".m/part.$1" /tmp/m/ && ls /tmp/m | tr '\n' ' '
    ;;
  chunk15)
    mkdir -p /tmp/m15 && cp ".m15/part.$1" /tmp/m15/ && ls /tmp/m15 | tr '\n' ' '
    ;;
  vchunk)
    mkdir -p "$vdir" && cp ".vllm/part.$1" .vllm/parts.sha256 "$vdir/" && ls "$vdir" | tr '\n' ' '
    ;;
  vinstall)
    [ -f "$vdir/parts.sha256" ] || { echo "vinstall: no piece carried yet (vchunk NN)" >&2; exit 2; }
    check_pieces "$vdir" parts.sha256 vinstall
    cat "$vdir"/part.* | tar xf - -C "$vdir"
    started=$SECONDS
    # Offline, from the carried wheels and what the image has; vllm 0.26.0 pins the image's torch 2.11.0. The carry
    # replaces six of the image's packages (numba, numpy, protobuf, setuptools, ...: configs/vllm/wheels-0.26.0.txt),
    # so pip's word on what else on the image then wants other versions is shown.
    ${PIP:-python3 -m pip} install --no-index --find-links "$vdir/wheels" -r "$vdir/requirements.txt" \
      > "$out/vinstall.log" 2>&1 || { tail -20 "$out/vinstall.log"; echo "vinstall: pip install failed" >&2; exit 1; }
    echo "installed in $((SECONDS - started)) s"
    grep -E " requires .*, but you have |^Successfully installed" "$out/vinstall.log" | cut -c1-600 || true
    ${PYTHON:-python3} -c "import torch, vllm; print('vllm', vllm.__version__, 'torch', torch.__version__)"
    ;;
  convert15)
    convert15
    grep -E "Elapsed|Maximum resident" "$out/convert15.log" || tail -3 "$out/convert15.log"
    ;;
  convert)
    convert; tail -3 "$out/convert.log" 2>/dev/null || true
    ;;
  bench)
    prepare_model
    # shellcheck disable=SC2086  (the lists are meant to split into words)
    python3 benchmarks/gpu_backends.py --model "$model_dir" --backends ${BACKENDS:-unsloth transformers} \
      --variants ${VARIANTS:-before stop stop+graphs} --transformers-variants ${TVARIANTS:-stop} --steps "${STEPS:-3}" \
      ${START_ADAPTER:+--start-adapter "$START_ADAPTER"} ${DATA_DIR:+--data-dir "$DATA_DIR"} \
      ${PROMPTS:+--prompts-per-step $PROMPTS} ${MICRO_BATCH:+--micro-batch "$MICRO_BATCH"} \
      ${MAX_LEN:+--max-completion-length "$MAX_LEN"} \
      --out "$out/${BENCH_OUT:-multiturn}.json" > "$out/${BENCH_OUT:-multiturn}.log" 2>&1 \
      || echo "gpu_backends.py exited with $?"
    tail -c 6000 "$out/${BENCH_OUT:-multiturn}.log"
    ;;
  decode)
    python3 benchmarks/decode_step.py "$@" --out "$out/decode_step.json" > "$out/decode_step.log" 2>&1 \
      || echo "decode_step.py exited with $?"
    grep -vE "^\{" "$out/decode_step.log" | tail -60
    ;;
  memory17)
    random17
    python3 benchmarks/gpu_backends.py --model /tmp/q17 --backends unsloth \
      --variants ${VARIANTS:-stop+graphs+cap+grouped+merged} \
      --steps "${STEPS:-2}" --max-completion-length 1024 --prompts-per-step "$@" --micro-batch 6 \
      --out "$out/memory_17b.json" > "$out/memory_17b.log" 2>&1 || echo "gpu_backends.py exited with $?"
    grep -iE "peak|prompts|episodes/s" "$out/memory_17b.log" | tail -20
    ;;
  phase)
    # A short train.py phase on the carried model with the flags given (a new lever's first run under Unsloth, e.g.
    # MODEL=random1.7b ... phase --phase easy --max_steps 3 --guide_unsolved): its summary and notes, metrics.jsonl back.
    prepare_model
    rm -rf /tmp/phase
    python3 train.py --model "$model_dir" --data_dir /tmp/spider --output_dir /tmp/phase --report_to none \
      --save_strategy no "$@" > "$out/phase.log" 2>&1 || echo "train.py exited with $?"
    for metrics in /tmp/phase/*/metrics.jsonl; do [ -e "$metrics" ] && cp "$metrics" "$out/phase_metrics.jsonl"; done
    grep -E "^\[train\]|Error|WARNING|NOTE" "$out/phase.log" | cut -c1-500 | tail -30
    ;;
  bg)
    name=$1; shift
    mkdir -p $runs/extras
    OUT=$runs/extras setsid nohup bash "$0" "$@" > "$runs/$name.log" 2>&1 &
    echo $! > "$runs/$name.pid"; echo "started $name: $* (pid $!)"
    ;;
  eval-modes)
    # One process, the model loaded once under Unsloth: the held-out eval with one padded call a turn, then in
    # rounds (benchmarks/eval_generation.py; 2026-12-01e measured padded against continuous, 240 vs 214 s).
    # Files named after the adapter's run (.../sft-seed28/sft/adapter: eval-generation-sft-seed28), so that two evals
    # queued into one extras folder keep both.
    figures="$out/eval-generation-$(basename "$(dirname "$(dirname "$1")")")"
    python3 benchmarks/eval_generation.py --checkpoint "$1" --data-dir "$work/data" --split dev --max-new-tokens 256 \
      --modes ${MODES:-padded rounds} --out "$figures.json" > "$figures.log" 2>&1 \
      || echo "eval_generation.py exited with $?"
    grep -E "^ *[a-z]+: |x the time" "$figures.log" || tail -5 "$figures.log"
    ;;
  veval)
    # The held-out eval of one adapter through vLLM, then through Unsloth's native path (rounds), each its own
    # process (vLLM takes a share of the GPU for its cache): seconds and accuracy side by side (issue 32).
    run=$(basename "$(dirname "$(dirname "$1")")")
    for backend in ${VEVAL_BACKENDS:-vllm unsloth}; do
      heldout_eval "$1" "veval-$run-$backend" "$backend" --backend "$backend"
    done
    ;;
  eval-cores)
    run=$(basename "$(dirname "$(dirname "$1")")")
    heldout_eval "$1" "ecore-$run-grouped" grouped
    heldout_eval "$1" "ecore-$run-unsloth" unsloth --no-grouped-decode-attention
    ;;
  proof)
    prepare_model
    [ -f "$work/results.json" ] && cp "$work/results.json" "$out/results.json"
    # Results go straight to $OUT (rewritten after every arm), so a call cut off by its time limit still
    # brings back every arm it finished; /tmp/lp keeps them for the next call on this machine.
    # shellcheck disable=SC2086
    python3 experiments/learning_proof.py --model "$model_dir" --data-dir /tmp/spider --work "$work" \
      --results "$out/results.json" --report "$out/learning_proof.md" --arms "$@" ${PROOF_FLAGS:-} \
      > "$out/proof.log" 2>&1 || echo "learning_proof.py exited with $?"
    cp "$out/results.json" "$work/results.json" 2>/dev/null || true
    grep -E "^\[proof\]|^\[train\]|^\[sft\]|Error|overall|\{'loss'" "$out/proof.log" | cut -c1-400 | tail -40 || true
    ;;
  start)
    prepare_model
    name=$1; shift
    mkdir -p "$runs/report-$name"
    # shellcheck disable=SC2086
    setsid nohup python3 experiments/learning_proof.py --model "$model_dir" --data-dir /tmp/spider --work "$work" \
      --results "$runs/results-$name.json" --report "$runs/report-$name/learning_proof.md" "$@" ${PROOF_FLAGS:-} \
      > "$runs/$name.log" 2>&1 &
    echo $! > "$runs/$name.pid"; echo "started $name (pid $!)"
    ;;
  after)
    # Issue 10's short measurements queued behind a learning-proof run, so that one warm machine does both
    # without a device call in between (the machine goes back after 30 s idle).
    name=$1 adapter=$2
    queue_behind "$name" after "x=$runs/extras
      echo '[after] dev eval'; python3 -m eval --checkpoint $adapter --out \$x/dev-eval --max-new-tokens 256 --no-progress
      echo '[after] 1.7B-shaped memory'; python3 models.py random --size 1.7b --out /tmp/q17 &&
        python3 benchmarks/gpu_backends.py --model /tmp/q17 --backends unsloth --variants stop+graphs --steps 3 \
          --max-completion-length 1024 --out \$x/memory_17b_6x1024.json
      echo '[after] eval modes'; OUT=\$x bash $0 eval-modes $adapter
      echo '[after] done'"
    ;;
  then)
    # Like after, for any one stage: what follows a run must already wait on the machine when the run ends.
    # Named then-STAGE, so a later stage can wait on it in turn (then then-bench start line3b ...).
    # AS=NAME names it otherwise, so one stage can be queued twice (two benches: AS=bench-vs-trl).
    name=$1 queued=${AS:-then-$2}; shift
    # start returns at once: the queued run then waits for the run it started, so that what is queued behind it
    # waits too (2026-12-02: a bench queued behind `then ... start` ran beside that run's training).
    started_run=""
    [ "$1" = start ] && started_run="; $(until_ended "$2")"
    queue_behind "$name" "$queued" \
      "echo '[then] $*'; OUT=$runs/extras bash $0 $*$started_run; echo '[then] done'"
    ;;
  watch)
    # SECONDS counts from this script's start; a device call that also converts or starts runs must leave room
    # (2026-12-01f: `watch 540` after a convert ran past the call's 600 s and its files did not come back).
    deadline=$((SECONDS + $1))
    running() { for pid in $runs/*.pid; do [ -e "$pid" ] && kill -0 "$(cat "$pid")" 2>/dev/null && return 0; done; return 1; }
    # Cut off by the call's time limit (timeout sends TERM first), it still hands back what there is.
    trap 'collect; exit 124' TERM
    while running && [ $SECONDS -lt $deadline ]; do sleep 5 & wait $!; done
    collect
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader || true
    ;;
  stop)
    kill "$(cat "$runs/$1.pid")" && echo "stopped $1"
    ;;
  keep)
    # The device returns at most 8 files of 16 MiB, 64 MiB together, a call: 15 MiB pieces, 4 a call, and the
    # checksums with every call. A LoRA of the 0.5B at r=32 is 17.6M parameters (67 MiB in float32).
    dir=$1 name=$2 first=${3:-0} pieces_dir=$keep_dir/$2
    if [ ! -f "$pieces_dir/$name.sha256" ]; then
      wait=${KEEP_WAIT:-0}
      adapter_written "$dir" "$wait" || { echo "keep: no adapter_config.json in $dir (waited ${wait} s for it and its weights to settle)" >&2; exit 2; }
      mkdir -p "$pieces_dir"
      tar czf - -C "$dir" . | split -b "${PIECE_SIZE:-15M}" -d -a 2 - "$pieces_dir/$name.tgz."
      (cd "$pieces_dir" && sha256sum "$name".tgz.* > "$name.sha256")
    fi
    pieces=("$pieces_dir/$name".tgz.*)
    cp "$pieces_dir/$name.sha256" "$out/"
    index=$first
    while [ "$index" -lt ${#pieces[@]} ] && [ $((index - first)) -lt "${PIECES_PER_CALL:-4}" ]; do
      cp "${pieces[$index]}" "$out/"; index=$((index + 1))
    done
    echo "keep $name: pieces $first-$((index - 1)) of ${#pieces[@]} returned"
    if [ "$index" -lt ${#pieces[@]} ]; then echo "next: keep $dir $name $index"; fi
    ;;
  restore)
    name=$1 dest=$2 pieces_dir=$keep_dir/$1
    mkdir -p "$pieces_dir"
    cp ".adapters/$name/"* "$pieces_dir/" 2>/dev/null || true
    [ -f "$pieces_dir/$name.sha256" ] || { echo "restore $name: no $name.sha256 carried yet" >&2; exit 2; }
    check_pieces "$pieces_dir" "$name.sha256" "restore $name"
    mkdir -p "$dest" && cat "$pieces_dir/$name".tgz.* | tar xzf - -C "$dest" && echo "restored $name into $dest"
    ;;
  *) echo "unknown stage $stage" >&2; exit 2 ;;
esac
