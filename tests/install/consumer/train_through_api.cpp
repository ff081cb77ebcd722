// Trains a config through phalanx's C++ API on the CPU, as a user's own program would:
//   train_through_api CONFIG.yaml RUN_DIR [key=value ...]     (under mpirun for several ranks)
// It prints the step count and test accuracy of the summary, and exits as `phalanx train` does
// (2 for bad input, 1 for any other failure).
#include <cstdio>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/comm/communicator.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/comm/agreement.hpp"
#include "phalanx/train/job.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml RUN_DIR [key=value ...]\n", argv[0]);
    return 2;
  }
  const std::string config_path = argv[1];
  const std::string run_directory = argv[2];
  const std::vector<std::string> overrides(argv + 3, argv + argc);
  try {
    phalanx::comm::MpiSession session(&argc, &argv);
    const auto world = phalanx::comm::Communicator::world();
    const auto backend = phalanx::backend::make_cpu_backend(1);
    phalanx::train::JobRequest request;
    request.config = phalanx::config::load(config_path, overrides);
    request.config_source = config_path;
    request.run_directory = run_directory;
    phalanx::train::Job job(std::move(request), world, phalanx::train::LentDevice{backend.get(), 1, nullptr});
    const auto summary = job.run();
    if (world.rank() == 0)
      std::printf("through the API: %lld steps, test accuracy %.4f\n", summary.at("steps").get<long long>(),
                  summary.at("test_accuracy").get<double>());
    return 0;
  } catch (const phalanx::Error& error) {
    std::fprintf(stderr, "train_through_api: error: %s\n", error.what());
    return error.exit_status();
  }
}
