// Checks of class-name lists (see class_names.hpp).
#include "class_names.hpp"

#include <unordered_map>

#include "phalanx/core/utf8.hpp"

namespace phalanx::data {

std::string class_names_problem(const std::vector<std::string>& names) {
  std::unordered_map<std::string, std::size_t> first_index;
  first_index.reserve(names.size());
  for (std::size_t index = 0; index < names.size(); ++index) {
    const std::string& name = names[index];
    if (name.empty()) return "class name " + std::to_string(index) + " is empty";
    if (const std::string problem = utf8_problem(name); !problem.empty())
      return "class name " + std::to_string(index) + " is " + problem;
    const auto [found, inserted] = first_index.emplace(name, index);
    if (!inserted)
      return "class names " + std::to_string(found->second) + " and " + std::to_string(index) +
             " are both '" + name + "'";
  }
  return "";
}

}  // namespace phalanx::data
