// Exact distributed evaluation.
#include "phalanx/train/evaluation.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "loop/input_batch.hpp"
#include "phalanx/core/timer.hpp"
#include "phalanx/data/data_source.hpp"
#include "phalanx/data/shard_plan.hpp"
#include "phalanx/data/split_reader.hpp"
#include "phalanx/train/top_k.hpp"

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
                          const comm::Communicator& communicator, int batch_size,
                          const std::vector<int>& top_k, const std::function<void()>& before_reduction) {
  Stopwatch stopwatch;
  auto& backend = model.backend();
  const int classes = model.classes();
  const std::int64_t begin = 0, end = part.count;
  InputBatch inputs(backend, batch_size, part.height, part.width, part.channels, mean, standard_deviation);
  // loss sum, correct, then the samples correct at each k of top_k
  std::vector<double> sums(2 + top_k.size(), 0.0);
  std::int64_t count = 0;
  // Top-k ranks the probabilities on the host: a [batch, classes] copy per batch, small beside the
  // forward pass, and the same code for every backend and activation precision.
  std::optional<Tensor> predicted, probabilities;
  std::vector<float> host_probabilities;
  if (!top_k.empty()) {
    predicted.emplace(backend, Shape{batch_size}, DType::Int32);
    probabilities.emplace(backend, Shape{batch_size, classes});
    host_probabilities.resize(static_cast<std::size_t>(batch_size) * static_cast<std::size_t>(classes));
  }
  nn::ForwardContext context;
  context.mode = nn::Mode::Evaluation;
  context.rank = communicator.rank();
  for (std::int64_t first = begin; first < end; first += batch_size) {
    const int size = static_cast<int>(std::min<std::int64_t>(batch_size, end - first));
    inputs.load(part.images.data() + first * part.image_bytes(), part.labels.data() + first, size);
    const Tensor& logits = model.forward(inputs.input(), context);
    const auto totals =
        backend.softmax_cross_entropy(size, classes, logits.data(), inputs.labels(), 0.0f, 1.0f, nullptr);
    sums[0] += totals.loss_sum;
    sums[1] += static_cast<double>(totals.correct);
    if (!top_k.empty()) {
      backend.predict(size, classes, logits.data(), predicted->data_as<std::int32_t>(),
                      probabilities->data());
      backend.copy_to_host(
          host_probabilities.data(), probabilities->data(),
          static_cast<std::size_t>(size) * static_cast<std::size_t>(classes) * sizeof(float));
      const std::int32_t* labels = part.labels.data() + first;
      for (int sample = 0; sample < size; ++sample) {
        const int rank = label_rank(host_probabilities.data() + static_cast<std::size_t>(sample) * classes,
                                    classes, labels[sample]);
        for (std::size_t index = 0; index < top_k.size(); ++index) sums[2 + index] += rank < top_k[index];
      }
    }
    count += size;
  }
  if (before_reduction) before_reduction();
  communicator.allreduce_sum(sums.data(), static_cast<std::int64_t>(sums.size()));
  communicator.allreduce_sum(&count, 1);
  EvaluationResult result;
  result.samples = count;
  const auto fraction = [&](double sum) { return count ? sum / static_cast<double>(count) : 0.0; };
  result.loss = fraction(sums[0]);
  result.accuracy = fraction(sums[1]);
  for (std::size_t index = 0; index < top_k.size(); ++index)
    result.top_k.push_back({top_k[index], fraction(sums[2 + index])});
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
