// phalanx executable: all logic lives in the modules; this only hands over the command line.
#include "phalanx/cli/cli.hpp"

int main(int argc, char** argv) {
  return phalanx::cli::run(argc, argv);
}
