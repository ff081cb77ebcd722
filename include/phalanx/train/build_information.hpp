// What a user filing a bug on a cluster must say: phalanx's version and commit, the build type,
// and the versions of the libraries this process loaded (CUDA, cuDNN, NCCL, HDF5, oneDNN, MPI).
// `phalanx --version` prints it; every run's summary.json carries it as "version".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace phalanx::train {

// {"phalanx", "git_commit", "build_type", "compiler", "cuda": {"built", "toolkit", "runtime",
// "driver", "cudnn", "nccl"}, "hdf5", "onednn", "mpi"}. Asks no device and needs no MPI_Init.
nlohmann::json build_information();
// The same as lines of text, one library a line, for --version (no final newline).
std::string describe_build(const nlohmann::json& information);

}  // namespace phalanx::train
