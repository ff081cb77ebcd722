#!/usr/bin/env bash
# Installs the Debian packages phalanx builds, tests and runs with (idempotent: apt-get runs only
# when something is missing). The CUDA toolkit, cuDNN and NCCL are expected under /usr/local/cuda.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libopenmpi-dev openmpi-bin libhdf5-dev libyaml-cpp-dev libgtest-dev
          libbenchmark-dev libdnnl-dev ocl-icd-opencl-dev libcli11-dev nlohmann-json3-dev zlib1g-dev libpng-dev dataset-fashion-mnist
          python3 python3-h5py python3-numpy python3-yaml
          libturbojpeg0-dev python3-pil libhdf5-openmpi-dev)
# Debian's oneDNN CMake package (dnnl-config.cmake) looks for OpenCL, but libdnnl-dev only
# recommends ocl-icd-opencl-dev, which --no-install-recommends leaves out: name it.
# The observability tests: report screenshots (chromium, python3-pil), TensorBoard read-back (a venv).
packages+=(chromium python3-pil python3-venv)
# Sweeps: the SQLite results database (the tests read it with Python's built-in sqlite3).
packages+=(libsqlite3-dev)
# Cluster launch tests: a real local Slurm (slurmctld, slurmd, munge) and network namespaces.
packages+=(slurm-wlm munge iproute2)
# The install test: `module load phalanx` with Environment Modules; the build stamps its git commit.
packages+=(environment-modules git)
if [ "${PHALANX_WITH_TORCH:-0}" = 1 ]; then packages+=(python3-torch); fi
# The fuzz targets (launch/sanitize.sh fuzz): clang with libFuzzer and its sanitizer runtimes, and
# LLVM's OpenMP for the CPU backend built with clang. (GCC's sanitizer runtimes come with g++.)
if [ "${PHALANX_WITH_FUZZ:-0}" = 1 ]; then packages+=(clang libclang-rt-14-dev libomp-dev); fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  start=$SECONDS
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "installed ${#missing[@]} packages (and what they depend on) in $((SECONDS - start)) s"
fi
