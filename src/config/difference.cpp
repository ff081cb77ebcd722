// first_difference: names the first differing line of two resolved configs, for the errors of
// a rank whose config differs from rank 0's and of a resume whose config breaks the run.
#include <sstream>

#include "phalanx/config/config.hpp"

namespace phalanx::config {
namespace {
std::string trimmed(const std::string& line) {
  return line.substr(std::min(line.find_first_not_of(' '), line.size()));
}
}  // namespace

std::string first_difference(const std::string& yaml, const std::string& reference_yaml,
                             const std::string& where_reference) {
  std::istringstream lines(yaml), reference_lines(reference_yaml);
  std::string line, reference_line;
  for (int number = 1;; ++number) {
    const bool more = static_cast<bool>(std::getline(lines, line));
    const bool more_reference = static_cast<bool>(std::getline(reference_lines, reference_line));
    if (!more && !more_reference) return "no line differs";
    if (!more) line.clear();
    if (!more_reference) reference_line.clear();
    if (line != reference_line)
      return "line " + std::to_string(number) + " of the resolved config is '" + trimmed(line) +
             "' here but '" + trimmed(reference_line) + "' " + where_reference;
  }
}

}  // namespace phalanx::config
