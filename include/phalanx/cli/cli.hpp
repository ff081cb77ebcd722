// The `phalanx` command: parses the command line and calls the modules. Returns the exit status
// (0 success, 2 bad usage/config/data, 1 other failure; docs/DESIGN.md §4).
#pragma once

namespace phalanx::cli {

int run(int argc, char** argv);

}  // namespace phalanx::cli
