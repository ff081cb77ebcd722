// A config's model input from its dataset file or from --sample-shape and --classes.
#include "model_input.hpp"

#include <sstream>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::cli {
namespace {

Shape parse_sample_shape(const std::string& text) {
  std::vector<std::int64_t> sizes;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, 'x')) {
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    PHALANX_REQUIRE_INPUT(used == part.size() && !part.empty() && value >= 1,
                          "--sample-shape must read HxWxC with positive sizes (got '", text, "')");
    sizes.push_back(value);
  }
  PHALANX_REQUIRE_INPUT(sizes.size() == 3, "--sample-shape must read HxWxC (got '", text, "')");
  return Shape{sizes[0], sizes[1], sizes[2]};
}

}  // namespace

ModelInput model_input(const config::Config& config, const std::string& config_path,
                       const std::string& sample_shape, int classes) {
  // 0 is the default (the dataset's classes); below it is a slip, which a model plan would take
  // as a negative layer width.
  PHALANX_REQUIRE_INPUT(classes >= 0, "--classes must be at least 1 (got ", classes, ")");
  ModelInput input;
  input.classes = classes;
  if (!sample_shape.empty()) {
    input.sample = parse_sample_shape(sample_shape);
    PHALANX_REQUIRE_INPUT(classes >= 1, "--sample-shape needs --classes too");
    return input;
  }
  PHALANX_REQUIRE_INPUT(!config.data.path.empty(), config_path,
                        ": data.path is not set; give the image shape with --sample-shape HxWxC --classes N");
  const data::DatasetInfo info = data::read_dataset_info(config.data.path);
  const data::DatasetInfo::SplitInfo* split = info.find_split(config.data.train_split);
  PHALANX_REQUIRE_INPUT(split != nullptr, config.data.path, ": no split '", config.data.train_split, "'");
  input.sample = Shape{split->height, split->width, split->channels};
  if (input.classes == 0) input.classes = static_cast<int>(info.classes.size());
  return input;
}

}  // namespace phalanx::cli
