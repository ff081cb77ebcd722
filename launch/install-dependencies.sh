#!/usr/bin/env bash
# Installs the Debian packages phalanx builds, tests and runs with, and oneDNN 3: Debian's own where
# apt offers a libdnnl-dev of major version 3 or newer (Debian 13), else Intel's build from PyPI into
# build/dependencies/onednn (Debian 12). Idempotent: apt-get and pip run only when something is
# missing. The CUDA toolkit, cuDNN and NCCL are expected under /usr/local/cuda.
#   launch/install-dependencies.sh              what the build, the main job and the tests need
#   launch/install-dependencies.sh --main-job   only what building phalanx and its main job need
#                                               (launch/quickstart.sh): no browser, Slurm or test Python
set -euo pipefail
cd "$(dirname "$0")/.."
main_job_only=0
case "${1:-}" in
  "") ;;
  --main-job) main_job_only=1 ;;
  *) echo "usage: launch/install-dependencies.sh [--main-job]" >&2; exit 2 ;;
esac
# The build (the test and benchmark libraries too: the configure step looks for them), the data
# importer's image libraries, the sweeps' SQLite, git (the build stamps its commit) and the dataset;
# python3-venv holds oneDNN 3 where it comes from PyPI (below).
packages=(cmake ninja-build g++ pkg-config libopenmpi-dev openmpi-bin libhdf5-dev libyaml-cpp-dev libgtest-dev
          libbenchmark-dev libcli11-dev nlohmann-json3-dev zlib1g-dev libpng-dev libturbojpeg0-dev
          libsqlite3-dev git dataset-fashion-mnist python3 python3-venv)
if [ "$main_job_only" = 0 ]; then
  # The end-to-end tests read run folders with h5py and numpy, and configs with PyYAML; the data
  # tests and the parallel-HDF5 flavour need the HDF5 built on Open MPI.
  packages+=(python3-h5py python3-numpy python3-yaml libhdf5-openmpi-dev)
  # The observability tests: report screenshots (chromium, python3-pil), TensorBoard read-back (a venv).
  packages+=(chromium python3-pil)
  # Cluster launch tests: a real local Slurm (slurmctld, slurmd, munge) and network namespaces.
  packages+=(slurm-wlm munge iproute2)
  # The install test: `module load phalanx` with Environment Modules.
  packages+=(environment-modules)
fi
if [ "${PHALANX_WITH_TORCH:-0}" = 1 ]; then packages+=(python3-torch); fi
# clang builds (launch/clang-check.sh): clang and LLVM's OpenMP, which clang's -fopenmp links. The
# fuzz targets (launch/sanitize.sh fuzz) also need clang's libFuzzer and sanitizer runtimes. (GCC's
# sanitizer runtimes come with g++.)
if [ "${PHALANX_WITH_CLANG:-0}" = 1 ] || [ "${PHALANX_WITH_FUZZ:-0}" = 1 ]; then
  packages+=(clang libomp-dev)
fi
if [ "${PHALANX_WITH_FUZZ:-0}" = 1 ]; then packages+=(libclang-rt-dev); fi

# oneDNN 3 (phalanx is written against its v3 API): which one, by the libdnnl-dev apt would install
# (the installed one, else the candidate of its package lists, fetched first where apt knows none, as
# in a fresh root). Debian's needs ocl-icd-opencl-dev too: its dnnl-config.cmake asks for OpenCL,
# which libdnnl-dev only recommends.
onednn_debian_version() {
  apt-cache policy libdnnl-dev 2>/dev/null | awk '$1 == "Installed:" && $2 != "(none)" { print $2; exit }
    $1 == "Candidate:" && $2 != "(none)" { print $2; exit }'
}
# apt-get as root; a user with sudo gets it through sudo (the README's "or with sudo").
as_root=()
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then as_root=(sudo); fi
onednn_version=$(onednn_debian_version)
if [ -z "$onednn_version" ] && { [ "$(id -u)" = 0 ] || [ ${#as_root[@]} -gt 0 ]; }; then
  ${as_root[@]+"${as_root[@]}"} apt-get update -qq
  onednn_version=$(onednn_debian_version)
fi
# Debian versions read "3.7.1+ds-1" (an epoch "1:" would come first).
onednn_major=$(echo "${onednn_version#*:}" | cut -d. -f1)
if [ -n "$onednn_major" ] && [ "$onednn_major" -ge 3 ] 2>/dev/null; then
  onednn_source=debian
  packages+=(libdnnl-dev ocl-icd-opencl-dev)
else
  onednn_source=pypi
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  start=$SECONDS
  if [ "$(id -u)" != 0 ] && [ ${#as_root[@]} -eq 0 ]; then
    echo "install-dependencies: these Debian packages are missing and apt-get needs root (run as root," \
      "or where sudo is): ${missing[*]}" >&2
    exit 1
  fi
  ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  echo "installed ${#missing[@]} packages (and what they depend on) in $((SECONDS - start)) s"
fi

if [ "$onednn_source" = debian ]; then
  echo "oneDNN: Debian's libdnnl-dev $onednn_version"
  exit 0
fi
# Where apt offers only oneDNN 2 (Debian 12 has 2.6): Intel's build on PyPI, the one on GNU OpenMP
# as phalanx's own loops are, in a virtual environment under the build folder, so no system Python
# package changes. CMake looks there (CMakeLists.txt); a oneDNN 3 of one's own (Spack, a module) is
# taken instead when dnnl_DIR or CMAKE_PREFIX_PATH names it. PyPI numbers these packages by oneAPI
# release: 2023.0 is oneDNN 3.0, 2022.x is 2.x.
onednn=build/dependencies/onednn
requirements="onednn-cpu-gomp>=2023 onednn-devel-cpu-gomp>=2023"
# The stamp is written last: an interrupted install, or other requirements, installs again.
if [ "$(cat "$onednn/installed" 2>/dev/null)" != "$requirements" ]; then
  echo "installing oneDNN 3 into $onednn: $requirements"
  start=$SECONDS
  python3 -m venv "$onednn"
  # shellcheck disable=SC2086  # the requirements are separate words
  "$onednn/bin/pip" install --quiet --disable-pip-version-check $requirements
  echo "$requirements" >"$onednn/installed"
  echo "installed oneDNN $(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$onednn/lib/cmake/dnnl/dnnl-config-version.cmake") in $((SECONDS - start)) s"
fi
