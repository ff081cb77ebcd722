// build_information: the build stamp and every module's library versions in one object, so the
// command line and summary.json report the same thing in the same words.
#include "phalanx/train/build_information.hpp"

#include "phalanx/backend/library_versions.hpp"
#include "phalanx/comm/library_versions.hpp"
#include "phalanx/core/build_stamp.hpp"
#include "phalanx/data/hdf5_version.hpp"

namespace phalanx::train {

nlohmann::json build_information() {
  const BuildStamp& stamp = build_stamp();
  const backend::CudaLibraryVersions cuda = backend::cuda_library_versions();
  nlohmann::json cuda_json = {{"built", cuda.built}};
  if (cuda.built) {
    cuda_json["toolkit"] = cuda.toolkit;
    cuda_json["runtime"] = cuda.runtime;
    cuda_json["driver"] = cuda.driver;
    cuda_json["cudnn"] = cuda.cudnn;
    cuda_json["nccl"] = comm::nccl_version();
  }
  return {{"phalanx", stamp.version},
          {"git_commit", stamp.git_commit},
          {"build_type", stamp.build_type},
          {"compiler", stamp.compiler},
          {"cuda", cuda_json},
          {"hdf5", data::hdf5_version()},
          {"onednn", backend::onednn_version()},
          {"mpi", comm::mpi_library_version()}};
}

std::string describe_build(const nlohmann::json& information) {
  const auto& cuda = information.at("cuda");
  std::string cuda_line = "off (built without the CUDA backend)";
  if (cuda.at("built").get<bool>())
    cuda_line = "on: toolkit " + cuda.at("toolkit").get<std::string>() + ", runtime " +
                cuda.at("runtime").get<std::string>() + ", driver " + cuda.at("driver").get<std::string>() +
                ", cuDNN " + cuda.at("cudnn").get<std::string>() + ", NCCL " +
                cuda.at("nccl").get<std::string>();
  return "phalanx " + information.at("phalanx").get<std::string>() + " (commit " +
         information.at("git_commit").get<std::string>() + ", " +
         information.at("build_type").get<std::string>() + ", " +
         information.at("compiler").get<std::string>() + ")\n" + "  CUDA:   " + cuda_line + "\n" +
         "  HDF5:   " + information.at("hdf5").get<std::string>() + "\n" +
         "  oneDNN: " + information.at("onednn").get<std::string>() + "\n" +
         "  MPI:    " + information.at("mpi").get<std::string>();
}

}  // namespace phalanx::train
