#!/usr/bin/env bash
# GPU check (docs/DESIGN.md §8), for the few minutes a GPU machine is available. Most important results first:
# the library check, the *Cuda* parity tests, fmnist_cnn trained to 92% test accuracy (seconds),
# host-to-device bandwidth (seconds to measure), ResNet-50 bf16 images/s against PyTorch eager on
# the same GPU (with fp32, then bf16 activations), the per-op times of both at ResNet-50's shapes,
# the bf16-activation run with train.deterministic false; then reduced precision, the automatic
# batch size, checkpoints across devices and the other benches.
# Every step has its own timeout and the whole run a budget (GPU_CHECK_BUDGET_S, default 540 s);
# summary.txt and steps.log in $OUT grow after every step, so a run killed midway still returns
# what it had.
#
# Prepared here, carried there: the binaries are built on the development machine with CUDA on
# and carried with the shared libraries and Open MPI plugins the GPU machine lacks (no Open MPI,
# HDF5 or oneDNN there; it has the driver, CUDA 13 and PyTorch with cuDNN and NCCL wheels).
#   here:  PHALANX_BUILD_DIR=build-cuda launch/gpu-check.sh --bundle gpu-bundle  (-> gpu-bundle.tar.xz)
#   there: launch/gpu-check.sh --run gpu-bundle       (unpacks gpu-bundle.tar.xz; results in $OUT)
# GPU_CHECK_DRY_RUN=1 runs every step on a machine without a GPU (device cpu, a tiny ResNet-50
# case, fmnist_cnn cut to 200 steps), to check the script itself before a lease; PYTHON names the
# interpreter with torch for the PyTorch side (default python3).
# At most 8 files come back from $OUT, so run folders and full logs stay in a work folder there
# and $OUT holds: summary.txt, steps.log (the tail of every step's log) and the key JSON results.
set -uo pipefail
mode=${1:-}
bundle=${2:-gpu-bundle}
out=${OUT:-gpu-check-out}
build=${PHALANX_BUILD_DIR:-build}
carry_limit_bytes=$((60 * 1024 * 1024))  # the carry limit is 64 MiB for the whole working tree

fail() {
  echo "gpu-check: $*" >&2
  exit 2
}

# Libraries that the GPU machine has or must supply itself: the C library, the driver, the CUDA
# toolkit and the cuDNN/cuBLAS/NCCL libraries (PyTorch's wheels); everything else is carried.
system_libraries='libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libcuda\.|libcudart|libcudnn|libcublas|libnccl|libnvidia|libnvrtc|libnvJitLink'

if [ "$mode" = --bundle ]; then
  set -e
  for binary in phalanx_backend_cuda_tests phalanx_comm_nccl_tests phalanx_parity_tests; do
    [ -x "$build/tests/$binary" ] ||
      fail "$build/tests/$binary is missing: build with CUDA first, e.g. PHALANX_BUILD_DIR=$build launch/build.sh -DPHALANX_CUDA=ON"
  done
  [ -x "$build/src/phalanx" ] || fail "$build/src/phalanx is missing: build it first (launch/build.sh)"
  [ -x "$build/bench/phalanx_bench_device_ops" ] ||
    fail "$build/bench/phalanx_bench_device_ops is missing: build with PHALANX_BENCH=ON (the default)"
  ldd "$build/src/phalanx" | grep -q libcudart ||
    fail "$build/src/phalanx is not linked with CUDA (configured with PHALANX_CUDA=OFF?); rebuild with CUDA on"
  component_folder=$(ompi_info --parsable --path pkglibdir 2>/dev/null | sed -n 's/^path:pkglibdir://p')
  pmix_folder=$(dirname "$(readlink -f "$(ldconfig -p | awk '/libpmix\.so\.2 / {print $NF; exit}')")")/pmix
  [ -d "$component_folder" ] || fail "Open MPI's plugin folder not found (ompi_info --path pkglibdir)"
  [ -d "$pmix_folder" ] || fail "PMIx's plugin folder not found (beside libpmix.so.2)"

  rm -rf "$bundle" && mkdir -p "$bundle/lib" "$bundle/mpi"
  cp "$build/src/phalanx" "$build/tests/phalanx_backend_cuda_tests" "$build/tests/phalanx_comm_nccl_tests" \
    "$build/tests/phalanx_parity_tests" "$bundle/"
  cp -r tests/parity/golden "$bundle/parity-golden"
  cp "$build/bench/phalanx_bench_device_ops" "$bundle/"
  cp bench/torch_resnet50.py bench/torch_device_ops.py "$bundle/"
  cp -r configs "$bundle/"
  # MPI_Init fails without Open MPI's plugins (opal_init finds no components), and the GPU
  # machine has no Open MPI: carry them and point Open MPI and PMIx at them in --run.
  cp -r "$component_folder" "$bundle/mpi/openmpi"
  cp -r "$pmix_folder" "$bundle/mpi/pmix"
  # The fabric (UCX, libfabric, verbs, PSM) and OpenSHMEM plugins serve networks a one-GPU check
  # never crosses, and pull in megabytes of libraries: left out.
  find "$bundle/mpi/openmpi" -regextype egrep \
    -regex '.*/mca_(.*_ucx|.*_ofi|btl_openib|mtl_psm2?|atomic_.*|memheap_.*|scoll_.*|spml_.*|sshmem_.*)\.so' -delete
  find "$bundle" -maxdepth 1 -type f -perm -u+x -print >"$bundle.objects"
  find "$bundle/mpi" -name '*.so' -print >>"$bundle.objects"
  while read -r object; do
    ldd "$object" 2>/dev/null | awk '/=> \// {print $3}' | grep -v -E "$system_libraries" || true
  done <"$bundle.objects" | sort -u | while read -r library; do cp -nL "$library" "$bundle/lib/"; done
  rm -f "$bundle.objects"
  # The dataset gzip-compressed inside HDF5, and everything in one xz archive: oneDNN alone is
  # 52 MB (libdnnl.so.3 of oneDNN 3.2, 7 MB in xz).
  "$build/src/phalanx" data import-idx /usr/share/datasets/fashion-mnist -o "$bundle/fashion-mnist.h5" \
    --classes fashion --gzip 4 >/dev/null
  tar -cJf "$bundle.tar.xz" -C "$(dirname "$bundle")" "$(basename "$bundle")"
  rm -rf "$bundle"
  size=$(stat -c %s "$bundle.tar.xz")
  [ "$size" -le "$carry_limit_bytes" ] || fail "$bundle.tar.xz is $size bytes, over the carry limit"
  echo "$bundle.tar.xz: $((size / 1024 / 1024)) MiB; carry it and run: launch/gpu-check.sh --run $bundle"
  exit 0
fi

[ "$mode" = --run ] || {
  echo "usage: launch/gpu-check.sh --bundle DIR | --run DIR" >&2
  exit 2
}

if [ ! -d "$bundle" ]; then
  [ -f "$bundle.tar.xz" ] || fail "no $bundle or $bundle.tar.xz: make it with --bundle on a machine with the build"
  unpacked="${TMPDIR:-/tmp}/phalanx-gpu-check"
  rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -xJf "$bundle.tar.xz" -C "$unpacked" ||
    fail "could not unpack $bundle.tar.xz"
  bundle="$unpacked/$(basename "$bundle")"
fi
bundle=$(cd "$bundle" && pwd)
mkdir -p "$out" || fail "cannot create $out"
out=$(cd "$out" && pwd)
work="${TMPDIR:-/tmp}/phalanx-gpu-check-work"
rm -rf "$work" && mkdir -p "$work"
summary="$out/summary.txt"
: >"$summary"
: >"$out/steps.log"
budget_seconds=${GPU_CHECK_BUDGET_S:-540}
dry_run=${GPU_CHECK_DRY_RUN:-0}
device=cuda resnet_batch=256 resnet_image=224 resnet_train=2560 resnet_test=256 resnet_steps=30 resnet_precision=bf16
fmnist_limit=()
# The sweep step's trials and rungs (epochs): on a dry run's two cores a third and a tenth of them.
sweep_size=(trials=9 budget.min=0.25 budget.max=2.25)
# The second ResNet-50 run holds activations in the compute precision (fp32 on a dry run's CPU).
resnet_activations=bf16
if [ "$dry_run" = 1 ]; then
  # ResNet-50 in fp32 on two CPU cores costs seconds per image: the smallest case that runs every
  # step (five steps, two of them timed after the warm-up, and four test batches per evaluation)
  # keeps the dry run's CI test short.
  device=cpu resnet_batch=2 resnet_image=32 resnet_train=8 resnet_test=8 resnet_steps=5 resnet_precision=fp32
  resnet_activations=fp32
  fmnist_limit=(--set train.max_steps=200)
  sweep_size=(trials=3 budget.min=0.025 budget.max=0.225)
fi
started=$SECONDS
note() { echo "$*" | tee -a "$summary"; }

# step NAME TIMEOUT COMMAND...: runs COMMAND with its output in $work/NAME.log, bounded by TIMEOUT
# and by what is left of the budget, with LD_LIBRARY_PATH=$step_library_path; appends the log's
# tail to steps.log. Sets step_status.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget_seconds - (SECONDS - started)))
  if [ "$left" -lt 10 ]; then
    note "$name: skipped, the budget of ${budget_seconds} s is spent"
    : >"$work/$name.log"
    step_status=124
    return
  fi
  [ "$limit" -le "$left" ] || limit=$left
  local begin=$SECONDS
  timeout --kill-after=5 "$limit" env LD_LIBRARY_PATH="$step_library_path" "$@" >"$work/$name.log" 2>&1
  step_status=$?
  local reason=""
  [ "$step_status" -eq 124 ] || [ "$step_status" -eq 137 ] && reason=" (timed out after ${limit} s)"
  {
    echo "===== $name: exit $step_status$reason, $((SECONDS - begin)) s: $*"
    tail -n 60 "$work/$name.log"
  } >>"$out/steps.log"
  note "$name: exit $step_status$reason in $((SECONDS - begin)) s"
}

# json FILE EXPRESSION: a value from a JSON file (EXPRESSION in Python over `d`), or "n/a".
json() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(eval(sys.argv[2], {"d": d}))' "$1" "$2" 2>/dev/null || echo n/a
}

note "== gpu-check $(date -u +%FT%TZ), budget ${budget_seconds} s"
note "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$summary"

# 1. Libraries first: CUDA, cuDNN, cuBLAS and NCCL from the system or PyTorch's wheels, the rest
# from the bundle; a library still missing is searched for once and its folder added.
torch_libraries=$("${PYTHON:-python3}" -c 'import nvidia, os; base = os.path.dirname(nvidia.__path__[0]) + "/nvidia"; print(":".join(os.path.join(base, d, "lib") for d in sorted(os.listdir(base))))' 2>/dev/null || true)
# Only the bundled binaries get this path: Debian's libstdc++ and friends in it are older than
# what the machine's Python and PyTorch need.
bundle_library_path="$bundle/lib:${torch_libraries}:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}"
step_library_path=$bundle_library_path
export OMPI_MCA_mca_base_component_path="$bundle/mpi/openmpi" PMIX_MCA_mca_base_component_path="$bundle/mpi/pmix"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
# A process started without mpirun (a singleton) starts Open MPI's orted daemon from the install's
# bin folder, which the GPU machine lacks: MPI_Init fails there. Isolated, the singleton starts none.
export OMPI_MCA_ess_singleton_isolated=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}  # NCCL's own reason for a failure, in the step's log
note "== libraries (ldd of the bundled binaries)"
# Every binary a step runs: a library only one of them needs is found here, not mid-run.
bundled_binaries=("$bundle/phalanx" "$bundle/phalanx_backend_cuda_tests" "$bundle/phalanx_comm_nccl_tests"
  "$bundle/phalanx_parity_tests" "$bundle/phalanx_bench_device_ops")
for library in $(LD_LIBRARY_PATH="$bundle_library_path" ldd "${bundled_binaries[@]}" 2>&1 |
  awk '/not found/ {print $1}' | sort -u); do
  found=$(timeout 30 find /usr /opt /lib /usr/local -name "$library" -print -quit 2>/dev/null)
  if [ -n "$found" ]; then
    bundle_library_path="$(dirname "$found"):$bundle_library_path"
    note "  $library: found at $found"
  else
    note "  $library: NOT FOUND anywhere"
  fi
done
step_library_path=$bundle_library_path
LD_LIBRARY_PATH="$bundle_library_path" ldd "$bundle/phalanx" | grep -E 'libcudart|libcudnn\.|libcublas\.|libnccl|not found' | tee -a "$summary"
if LD_LIBRARY_PATH="$bundle_library_path" ldd "${bundled_binaries[@]}" | grep -q "not found"; then
  note "FAILED: libraries are missing (above); nothing can run"
  exit 3
fi

# 2. Is there a GPU the CUDA runtime can use? Without one every later step would only fail.
step gpu-probe 60 "$bundle/phalanx_backend_cuda_tests" --gtest_filter=CudaDevice.BackendNamesItsDevice
if [ "$dry_run" = 1 ]; then
  note "  dry run: going on without a GPU (device $device)"
elif grep -q "SKIPPED" "$work/gpu-probe.log" || ! grep -q "RUN .*BackendNamesItsDevice" "$work/gpu-probe.log"; then
  # Skipped (the runtime sees no device) or never ran (the binary did not start): nothing to do.
  note "FAILED: no usable CUDA device: $(grep -m1 -E 'no CUDA device|error|Error' "$work/gpu-probe.log")"
  exit 3
elif [ "$step_status" -ne 0 ]; then
  # A device was found but the test failed (its name check, say): the rest can still run.
  note "  the device probe test failed (steps.log); going on"
fi

# 3. CPU-versus-CUDA parity of every op, the upload ordering, NCCL on one rank.
note "== *Cuda* tests"
step cuda-tests 240 "$bundle/phalanx_backend_cuda_tests" --gtest_filter='Cuda*'
note "  $(grep -E '^\[  (PASSED|FAILED)  \]|^\[  FAILED  \] [A-Za-z]' "$work/cuda-tests.log" | tr '\n' ' ')"
step nccl-tests 120 "$bundle/phalanx_comm_nccl_tests"
note "  $(grep -E '^\[  (PASSED|FAILED)  \]|^\[  FAILED  \] [A-Za-z]' "$work/nccl-tests.log" | tr '\n' ' ')"
# The presets against PyTorch's fp64 golden step (tests/parity), on the CUDA backend.
step preset-parity 120 PHALANX_PARITY_GOLDEN="$bundle/parity-golden" "$bundle/phalanx_parity_tests" --gtest_filter='*Cuda*'
note "  $(grep -E '^\[  (PASSED|FAILED)  \]|^\[  FAILED  \] [A-Za-z]' "$work/preset-parity.log" | tr '\n' ' ')"
grep -E ' on cuda: ' "$work/preset-parity.log" | cut -c1-160 | tee -a "$summary"

data="$bundle/fashion-mnist.h5"
config="$bundle/configs/fashion_mnist.yaml"

# 4. fmnist_cnn on one GPU: seconds of training to 92% test accuracy (goal: under 5 s), with the
# default job sized for one GPU (batch 256: a quarter of the steps, docs/BENCHMARKS.md).
note "== fmnist_cnn on the GPU: seconds to 92% test accuracy"
step train-fmnist 240 "$bundle/phalanx" train "$bundle/configs/fashion_mnist_gpu.yaml" --set device=$device --set data.path="$data" \
  "${fmnist_limit[@]}" --run-dir "$work/run-gpu"
result="$work/run-gpu/summary.json"
[ -f "$result" ] && cp "$result" "$out/fmnist-summary.json"
note "  test_accuracy $(json "$result" 'd["test_accuracy"]'), seconds_to_0.92 $(json "$result" 'd["seconds_to_accuracy"].get("0.92")'), wall $(json "$result" 'round(d["wall_seconds"], 1)') s, images/s $(json "$result" 'round(d["images_per_sec"])')"
note "  H2D hidden share $(json "$result" 'round(d["time_breakdown"]["host_to_device_total"]["hidden_share"], 4)'), step p50 $(json "$result" 'd["ranks"][0]["step_time_ms"]["p50_ms"]') ms"
note "  breakdown ms/step: $(json "$result" '", ".join("%s %.3f" % (k, v["ms_per_step"]) for k, v in d["time_breakdown"].items() if isinstance(v, dict) and "ms_per_step" in v)')"
note "  device stages (events, no host syncs) $(json "$result" 'round(sum(d["time_breakdown"][k]["ms_per_step"] for k in ("host_to_device", "forward", "backward", "allreduce_wait", "optimizer")), 3)') of $(json "$result" 'round(d["time_breakdown"]["step_ms"], 3)') ms/step"

# 5. Host-to-device bandwidth, pinned against pageable: seconds, before the long ResNet-50 runs.
note "== phalanx bench transfer (host to device, pinned vs pageable)"
step bench-transfer 90 "$bundle/phalanx" bench transfer
if [ -f "$work/bench-transfer.log" ]; then
  cp "$work/bench-transfer.log" "$out/transfer.txt"
  cat "$work/bench-transfer.log" >>"$summary"
fi

# 6. ResNet-50, bf16, batch 256 per GPU, synthetic 224x224: phalanx against PyTorch eager.
note "== resnet50 bf16 batch 256, synthetic 224x224: phalanx vs PyTorch (goal >= 1.0x)"
step synth-224 120 "$bundle/phalanx" data synth -o "$work/synth224.h5" --train $resnet_train --test $resnet_test \
  --height $resnet_image --width $resnet_image --channels 3 --classes 1000
resnet50_training=("$bundle/phalanx" train "$bundle/configs/resnet20_synth.yaml" --set device=$device
  --set model.preset=resnet50 --set data.path="$work/synth224.h5" --set train.batch_size=$resnet_batch
  --set train.precision=$resnet_precision --set train.max_steps=$resnet_steps --set train.epochs=3 --set train.label_smoothing=0
  --set checkpoint.every_steps=1000)
step train-resnet50 300 "${resnet50_training[@]}" --run-dir "$work/run-resnet50"
result="$work/run-resnet50/summary.json"
[ -f "$result" ] && cp "$result" "$out/resnet50-summary.json"
phalanx_rate=$(json "$result" 'round(d["images_per_sec"], 1)')
note "  phalanx: $phalanx_rate images/s, step p50 $(json "$result" 'd["ranks"][0]["step_time_ms"]["p50_ms"]') ms, peak memory $(json "$result" 'd.get("machine", {}).get("gpu_memory_peak_mib")') MiB"
note "  breakdown ms/step: $(json "$result" '", ".join("%s %.1f" % (k, v["ms_per_step"]) for k, v in d["time_breakdown"].items() if isinstance(v, dict) and "ms_per_step" in v)')"
step_library_path=${LD_LIBRARY_PATH:-} step torch-resnet50 240 "${PYTHON:-python3}" "$bundle/torch_resnet50.py" --batch-size $resnet_batch --image-size $resnet_image \
  --steps $resnet_steps --warmup $((resnet_steps / 3)) --device $device
tail -n 1 "$work/torch-resnet50.log" >"$out/torch-resnet50.json" 2>/dev/null
torch_rate=$(json "$out/torch-resnet50.json" 'round(d["images_per_sec"], 1)')
note "  pytorch: $torch_rate images/s ($(json "$out/torch-resnet50.json" 'd["framework"] + ", " + d["model"]'))"
note "  ratio phalanx/pytorch: $(python3 -c "print(round($phalanx_rate / $torch_rate, 3))" 2>/dev/null || echo n/a)"

# 6b. The same ResNet-50 run with activations held in bf16 (train.activation_dtype): every op moves
# 2-byte elements and only the weights are cast for the convolutions and GEMMs.
note "== resnet50 bf16 with bf16 activations (train.activation_dtype), otherwise the same run"
step train-resnet50-bf16-activations 300 "${resnet50_training[@]}" --set train.activation_dtype=$resnet_activations \
  --run-dir "$work/run-resnet50-bf16-activations"
result="$work/run-resnet50-bf16-activations/summary.json"
[ -f "$result" ] && cp "$result" "$out/resnet50-bf16-activations-summary.json"
activations_rate=$(json "$result" 'round(d["images_per_sec"], 1)')
note "  phalanx, $resnet_activations activations: $activations_rate images/s, step p50 $(json "$result" 'd["ranks"][0]["step_time_ms"]["p50_ms"]') ms, peak memory $(json "$result" 'd.get("machine", {}).get("gpu_memory_peak_mib")') MiB"
note "  breakdown ms/step: $(json "$result" '", ".join("%s %.1f" % (k, v["ms_per_step"]) for k, v in d["time_breakdown"].items() if isinstance(v, dict) and "ms_per_step" in v)')"
note "  ratio phalanx ($resnet_activations activations)/pytorch: $(python3 -c "print(round($activations_rate / $torch_rate, 3))" 2>/dev/null || echo n/a), against fp32 activations: $(python3 -c "print(round($activations_rate / $phalanx_rate, 3))" 2>/dev/null || echo n/a)"

# 6c. What issue 3 asks to see working beside the numbers: the automatic batch size, and
# checkpoints moving between CPU and GPU with the same accuracy (a minute or so together).
note "== train.batch_size: auto"
step train-auto-batch 150 "$bundle/phalanx" train "$config" --set device=$device --set data.path="$data" \
  --set train.max_steps=50 --set train.batch_size=auto --run-dir "$work/run-auto-batch"
note "  $(grep -m1 'batch_size: auto' "$work/train-auto-batch.log")"

note "== checkpoints across devices"
step eval-gpu-checkpoint-on-cpu 120 "$bundle/phalanx" eval --checkpoint "$work/run-gpu/checkpoints/latest.h5" \
  --data "$data" --device cpu
note "  GPU-trained, evaluated on the CPU: $(tail -n 1 "$work/eval-gpu-checkpoint-on-cpu.log"); on the GPU it had $(json "$work/run-gpu/summary.json" 'd["test_accuracy"]')"
step train-cpu 120 "$bundle/phalanx" train "$config" --set device=cpu --set data.path="$data" \
  --set train.max_steps=200 --run-dir "$work/run-cpu"
step eval-cpu-checkpoint-on-gpu 120 "$bundle/phalanx" eval --checkpoint "$work/run-cpu/checkpoints/latest.h5" \
  --data "$data" --device $device
note "  CPU-trained ($(grep -m1 -oE 'train.precision auto: [a-z0-9]+( \([^)]*\))?, train.activation_dtype auto: [a-z0-9]+' "$work/train-cpu.log"): a bf16 run's checkpoint where auto chose bf16), evaluated on the GPU: $(tail -n 1 "$work/eval-cpu-checkpoint-on-gpu.log"); on the CPU it had $(json "$work/run-cpu/summary.json" 'd["test_accuracy"]')"

# 7. Where the ResNet-50 time goes, op by op: phalanx's ops in fp32, bf16 compute and bf16
# activations, then PyTorch's on bf16 tensors as autocast runs them, at the same shapes
# (bench/device_ops.cpp, bench/torch_device_ops.py).
note "== device ops at ResNet-50's shapes, ms per call: phalanx, then PyTorch"
step bench-device-ops 120 "$bundle/phalanx_bench_device_ops" --device $device
[ -f "$work/bench-device-ops.log" ] && cat "$work/bench-device-ops.log" >>"$summary"
step_library_path=${LD_LIBRARY_PATH:-} step torch-device-ops 120 "${PYTHON:-python3}" "$bundle/torch_device_ops.py" \
  --device $device
[ -f "$work/torch-device-ops.log" ] && cat "$work/torch-device-ops.log" >>"$summary"

# 7b. ResNet-50 with bf16 activations and train.deterministic: false (cuDNN's fastest algorithms of
# any kind, as PyTorch's side runs with cudnn.benchmark and no determinism): what determinism costs.
note "== resnet50 bf16 activations, train.deterministic false"
step train-resnet50-fastest 300 "${resnet50_training[@]}" --set train.activation_dtype=$resnet_activations \
  --set train.deterministic=false --run-dir "$work/run-resnet50-fastest"
result="$work/run-resnet50-fastest/summary.json"
fastest_rate=$(json "$result" 'round(d["images_per_sec"], 1)')
note "  phalanx, $resnet_activations activations, any algorithm: $fastest_rate images/s, step p50 $(json "$result" 'd["ranks"][0]["step_time_ms"]["p50_ms"]') ms"
note "  ratio to pytorch: $(python3 -c "print(round($fastest_rate / $torch_rate, 3))" 2>/dev/null || echo n/a), to the deterministic run: $(python3 -c "print(round($fastest_rate / $activations_rate, 3))" 2>/dev/null || echo n/a)"

# 8. The rest, as time allows.
note "== reduced precision and device-side augmentation (fmnist_cnn, 300 steps each)"
for precision in bf16 fp16; do
  step "train-$precision" 120 "$bundle/phalanx" train "$config" --set device=$device --set data.path="$data" \
    --set train.max_steps=300 --set train.precision=$precision --set data.augment.random_crop_padding=2 \
    --set data.augment.horizontal_flip=true --run-dir "$work/run-$precision"
  note "  $precision: test_accuracy $(json "$work/run-$precision/summary.json" 'd["test_accuracy"]'), loss scaling $(json "$work/run-$precision/summary.json" 'd.get("loss_scaling")')"
done

note "== phalanx bench devices (fmnist_cnn, 100 steps, CPU and GPU side by side)"
step bench-devices 150 "$bundle/phalanx" bench devices "$config" --steps 100 --set data.path="$data" \
  --run-dir "$work/bench-devices"
grep -s -E "^(# bench|device|cpu|cuda)" "$work/bench-devices.log" >>"$summary"

note "== phalanx bench allreduce (1 rank: the NCCL path runs, no link is crossed)"
step bench-allreduce 90 "$bundle/phalanx" bench allreduce --max-bytes 16777216
tail -n 3 "$work/bench-allreduce.log" >>"$summary" 2>/dev/null

note "== a job of one GPU rank and one CPU rank is refused (exit 2 expected)"
if command -v mpirun >/dev/null; then
  step train-mixed 90 mpirun -np 2 --oversubscribe --bind-to none "$bundle/phalanx" train "$config" \
    --set data.path="$data" --set train.max_steps=5 --run-dir "$work/run-mixed"
  note "  $(grep -m1 'error' "$work/train-mixed.log")"
  note "== the same job asking for a batch split by throughput trains (GPU rank stages its gradients over MPI)"
  step train-mixed-split 120 mpirun -np 2 --oversubscribe --bind-to none "$bundle/phalanx" train "$config" \
    --set data.path="$data" --set train.max_steps=50 --set distributed.batch_split=throughput \
    --run-dir "$work/run-mixed-split"
  note "  $(grep -m1 'batch split' "$work/train-mixed-split.log"); test_accuracy $(json "$work/run-mixed-split/summary.json" 'd["test_accuracy"]')"
  # A sweep with a GPU worker group (rank 0, NCCL) beside two CPU groups: GPU-first dispatch, and
  # joins that stay within a kind (one GPU cannot show a GPU join: NCCL needs a device per rank).
  note "== an ASHA sweep on one GPU group and two CPU groups (${sweep_size[*]}, epochs, eta 3)"
  step sweep-gpu-and-cpu 180 mpirun -np 3 --oversubscribe --bind-to none "$bundle/phalanx" sweep \
    "$bundle/configs/sweeps/fmnist_asha.yaml" --sweep-dir "$work/sweep-gpu-and-cpu" --set config.data.path="$data" \
    "${sweep_size[@]}"
  grep -s -E 'worker groups|joins trial|handed over|sweep done' "$work/sweep-gpu-and-cpu.log" | tail -n 8 >>"$summary"
  note "  jobs per device: $(grep -s -o -E 'worker [0-9+]+ \((cpu|gpu)' "$work/sweep-gpu-and-cpu.log" | sort | uniq -c | tr -s ' \n' ' ')"
else
  note "  skipped: no mpirun on this machine (Open MPI's launcher is not carried)"
fi
note "== done in $((SECONDS - started)) s"
