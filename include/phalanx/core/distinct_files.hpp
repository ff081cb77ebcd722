// An output that is one of the inputs under another name (a link, ./a and a) would be replaced
// while, or before, it is read: commands that write a file refuse that first.
#pragma once

#include <string>

namespace phalanx {

// Throws an input error naming `output` when it is the same file as `input` (`what` says what the
// input is: "checkpoint", "dataset"). A file that does not exist yet is never the same.
void require_another_file(const std::string& input, const std::string& output, const char* what);

}  // namespace phalanx
