// The checks every list of class names gets where it comes in (a dataset's attribute, a source's
// names dataset, an import's names): the names become report labels, prediction columns and
// checkpoint metadata, where an empty name or two classes of one name would be read wrongly.
#pragma once

#include <string>
#include <vector>

namespace phalanx::data {

// "" when every name is non-empty UTF-8 and no two are equal; else what a refusal says, naming the
// first problem ("class name 3 is empty", "class names 2 and 7 are both 'cat'").
std::string class_names_problem(const std::vector<std::string>& names);

}  // namespace phalanx::data
