#!/usr/bin/env bash
# GPU check (DESIGN §8), for the few minutes a GPU machine is lent: runs the *Cuda* tests, a
# short Fashion-MNIST training on the GPU (fp32, bf16 and fp16 with device-side augmentation, auto
# batch size), checkpoints across devices both ways, and the GPU benchmarks.
# It writes logs and summary.txt to $OUT (default gpu-check-out/).
#
# Prepared here and carried there: the binaries are built on the development machine
# (launch/build.sh with CUDA on) and copied with the shared libraries the GPU machine may lack
# (`launch/gpu-check.sh --bundle DIR` collects them, within the 64 MiB carry limit); the GPU
# machine supplies the driver and CUDA, cuDNN and cuBLAS (PyTorch's nvidia/* wheels).
#   here:  launch/gpu-check.sh --bundle gpu-bundle      (writes gpu-bundle.tar.xz)
#   there: launch/gpu-check.sh --run gpu-bundle         (unpacks it)
set -uo pipefail
mode=${1:-}
bundle=${2:-gpu-bundle}
out=${OUT:-gpu-check-out}

if [ "$mode" = --bundle ]; then
  set -e
  rm -rf "$bundle" && mkdir -p "$bundle/lib"
  cp build/src/phalanx build/tests/phalanx_backend_cuda_tests "$bundle/"
  # Libraries the GPU machine may not have: everything ldd resolves outside the CUDA toolkit and libc.
  for binary in "$bundle/phalanx" "$bundle/phalanx_backend_cuda_tests"; do
    ldd "$binary" | awk '/=> \// {print $3}' | grep -v -E 'libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libcuda|libcudart|libcudnn|libcublas|libnccl|libnvidia' |
      while read -r library; do cp -n "$library" "$bundle/lib/"; done
  done
  # The dataset gzip-compressed inside HDF5, and everything in one xz archive: oneDNN alone is
  # 38 MB, the carry limit 64 MiB.
  build/src/phalanx data import-idx /usr/share/datasets/fashion-mnist -o "$bundle/fashion-mnist.h5" \
    --classes fashion --gzip 4 > /dev/null
  cp -r configs "$bundle/"
  tar -cJf "$bundle.tar.xz" -C "$(dirname "$bundle")" "$(basename "$bundle")"
  rm -rf "$bundle"
  du -sh "$bundle.tar.xz"
  exit 0
fi

if [ "$mode" != --run ]; then
  echo "usage: launch/gpu-check.sh --bundle DIR | --run DIR" >&2
  exit 2
fi

mkdir -p "$out"
# --bundle leaves DIR.tar.xz: unpack it beside the outputs.
if [ ! -d "$bundle" ] && [ -f "$bundle.tar.xz" ]; then
  unpacked="${TMPDIR:-/tmp}/phalanx-gpu-check"
  rm -rf "$unpacked" && mkdir -p "$unpacked" && tar -xJf "$bundle.tar.xz" -C "$unpacked"
  bundle="$unpacked/$(basename "$bundle")"
fi
summary="$out/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }

# CUDA libraries from PyTorch's wheels when the system has none on the loader path.
torch_libraries=$(python3 -c 'import nvidia, os; base = os.path.dirname(nvidia.__path__[0]) + "/nvidia"; print(":".join(os.path.join(base, d, "lib") for d in os.listdir(base)))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$bundle/lib:${torch_libraries}:${LD_LIBRARY_PATH:-}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

note "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee -a "$summary"
note "== missing libraries"; ldd "$bundle/phalanx" | grep "not found" | tee -a "$summary"

note "== *Cuda* tests"
timeout 300 "$bundle/phalanx_backend_cuda_tests" --gtest_filter='Cuda*' > "$out/cuda-tests.log" 2>&1
note "exit $? ; $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/cuda-tests.log" | tr '\n' ' ')"

note "== training fmnist_cnn on the GPU (1 rank)"
timeout 300 "$bundle/phalanx" train "$bundle/configs/fashion_mnist.yaml" --set device=cuda \
  --set data.path="$bundle/fashion-mnist.h5" --run-dir "$out/run-gpu" > "$out/train-gpu.log" 2>&1
note "exit $? ; $(tail -2 "$out/train-gpu.log" | head -1)"

note "== CPU-trained checkpoint evaluated on the GPU"
timeout 120 "$bundle/phalanx" train "$bundle/configs/fashion_mnist.yaml" --set device=cpu \
  --set data.path="$bundle/fashion-mnist.h5" --set train.max_steps=200 --run-dir "$out/run-cpu" > "$out/train-cpu.log" 2>&1
timeout 120 "$bundle/phalanx" eval --checkpoint "$out/run-cpu/checkpoints/latest.h5" \
  --data "$bundle/fashion-mnist.h5" --device cuda > "$out/eval-gpu.log" 2>&1
note "exit $? ; $(cat "$out/eval-gpu.log")"
note "cpu summary: $(grep -o '"test_accuracy": [0-9.]*' "$out/run-cpu/summary.json")"

note "== phalanx bench transfer (host to device, pinned vs pageable)"
timeout 120 "$bundle/phalanx" bench transfer > "$out/bench-transfer.log" 2>&1
note "exit $?"; tee -a "$summary" < "$out/bench-transfer.log"

note "== phalanx bench devices (fmnist_cnn, 100 steps, CPU and GPU side by side)"
timeout 300 "$bundle/phalanx" bench devices "$bundle/configs/fashion_mnist.yaml" --steps 100 \
  --set data.path="$bundle/fashion-mnist.h5" --run-dir "$out/bench-devices" > "$out/bench-devices.log" 2>&1
note "exit $?"; grep -E "^(# bench|device|cpu|cuda)" "$out/bench-devices.log" | tee -a "$summary"

note "== phalanx bench allreduce (1 rank: NCCL path only exercised, no link crossed)"
timeout 120 "$bundle/phalanx" bench allreduce --max-bytes 16777216 > "$out/bench-allreduce.log" 2>&1
note "exit $?"; tail -3 "$out/bench-allreduce.log" | tee -a "$summary"

note "== reduced precision and device-side augmentation (fmnist_cnn, 300 steps each)"
for precision in bf16 fp16; do
  timeout 300 "$bundle/phalanx" train "$bundle/configs/fashion_mnist.yaml" --set device=cuda \
    --set data.path="$bundle/fashion-mnist.h5" --set train.max_steps=300 --set train.precision=$precision \
    --set data.augment.random_crop_padding=2 --set data.augment.horizontal_flip=true \
    --run-dir "$out/run-$precision" > "$out/train-$precision.log" 2>&1
  note "$precision exit $? ; $(tail -2 "$out/train-$precision.log" | head -1) ; $(grep -o '"loss_scaling": {[^}]*}' "$out/run-$precision/summary.json" 2>/dev/null)"
done

note "== train.batch_size: auto"
timeout 300 "$bundle/phalanx" train "$bundle/configs/fashion_mnist.yaml" --set device=cuda \
  --set data.path="$bundle/fashion-mnist.h5" --set train.max_steps=50 --set train.batch_size=auto \
  --run-dir "$out/run-auto-batch" > "$out/train-auto-batch.log" 2>&1
note "exit $? ; $(grep 'batch_size: auto' "$out/train-auto-batch.log")"

note "== a job of one GPU rank and one CPU rank is refused (exit 2 expected; needs mpirun there)"
if command -v mpirun > /dev/null; then
  timeout 120 mpirun -np 2 --oversubscribe --bind-to none "$bundle/phalanx" train "$bundle/configs/fashion_mnist.yaml" \
    --set data.path="$bundle/fashion-mnist.h5" --set train.max_steps=5 --run-dir "$out/run-mixed" > "$out/train-mixed.log" 2>&1
  note "exit $? ; $(grep 'error' "$out/train-mixed.log" | head -1)"
else
  note "skipped: no mpirun on this machine"
fi

note "== GPU-trained checkpoint evaluated on the CPU"
timeout 120 "$bundle/phalanx" eval --checkpoint "$out/run-gpu/checkpoints/latest.h5" \
  --data "$bundle/fashion-mnist.h5" --device cpu > "$out/eval-cpu.log" 2>&1
note "exit $? ; $(cat "$out/eval-cpu.log") ; gpu summary: $(grep -o '"test_accuracy": [0-9.]*' "$out/run-gpu/summary.json")"
