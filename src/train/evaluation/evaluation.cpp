// Exact distributed evaluation.
#include "phalanx/train/evaluation.hpp"

#include <algorithm>
#include <vector>

#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/split_reader.hpp"
#include "loop/input_batch.hpp"

namespace phalanx::train {

namespace {
data::Split read_part(const data::SplitRangeReader& reader, const comm::Communicator& communicator) {
  const auto& info = reader.split();
  const auto [begin, end] =
      data::ShardPlan::evaluation_range(info.count, communicator.rank(), communicator.size());
  data::Split part;
  part.name = info.name;
  part.count = end - begin;
  part.height = info.height;
  part.width = info.width;
  part.channels = info.channels;
  part.images.resize(static_cast<std::size_t>(part.count * part.image_bytes()));
  part.labels.resize(static_cast<std::size_t>(part.count));
  reader.read(begin, end, part.images.data(), part.labels.data());
  return part;
}
}  // namespace

data::Split read_evaluation_part(const std::string& path, const std::string& split_name,
                                 const comm::Communicator& communicator) {
  return read_part(data::SplitReader(path, split_name), communicator);
}

data::Split read_evaluation_part(const config::DataConfig& data, const std::string& split_name,
                                 const comm::Communicator& communicator) {
  return read_part(*data::open_split_reader(data, split_name), communicator);
}

EvaluationResult evaluate(nn::Model& model, const data::Split& part, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation,
                          const comm::Communicator& communicator, int batch_size) {
  Stopwatch stopwatch;
  auto& backend = model.backend();
  const std::int64_t begin = 0, end = part.count;
  InputBatch inputs(backend, batch_size, part.height, part.width, part.channels, mean, standard_deviation);
  double sums[2] = {0, 0};  // loss sum, correct
  std::int64_t count = 0;
  nn::ForwardContext context;
  context.mode = nn::Mode::Evaluation;
  context.rank = communicator.rank();
  for (std::int64_t first = begin; first < end; first += batch_size) {
    const int size = static_cast<int>(std::min<std::int64_t>(batch_size, end - first));
    inputs.load(part.images.data() + first * part.image_bytes(), part.labels.data() + first, size);
    const Tensor& logits = model.forward(inputs.input(), context);
    const auto totals = backend.softmax_cross_entropy(size, model.classes(), logits.data(), inputs.labels(),
                                                      0.0f, 1.0f, nullptr);
    sums[0] += totals.loss_sum;
    sums[1] += static_cast<double>(totals.correct);
    count += size;
  }
  communicator.allreduce_sum(sums, 2);
  communicator.allreduce_sum(&count, 1);
  EvaluationResult result;
  result.samples = count;
  result.loss = count ? sums[0] / static_cast<double>(count) : 0.0;
  result.accuracy = count ? sums[1] / static_cast<double>(count) : 0.0;
  result.seconds = stopwatch.seconds();
  return result;
}

void average_buffers(nn::Model& model, const comm::Communicator& communicator) {
  auto& registry = model.registry();
  if (communicator.size() == 1 || registry.buffer_count() == 0) return;
  auto& backend = model.backend();
  std::vector<float> host(static_cast<std::size_t>(registry.buffer_count()));
  backend.copy_to_host(host.data(), registry.buffers().data(), host.size() * sizeof(float));
  communicator.allreduce_sum(host.data(), static_cast<std::int64_t>(host.size()));
  for (auto& value : host) value /= static_cast<float>(communicator.size());
  backend.copy_from_host(registry.buffers().data(), host.data(), host.size() * sizeof(float));
}

}  // namespace phalanx::train
