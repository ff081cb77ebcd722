// Exact distributed evaluation.
#include "phalanx/train/evaluation.hpp"

#include <algorithm>
#include <vector>

#include "phalanx/core/timer.hpp"
#include "phalanx/data/shard_plan.hpp"

namespace phalanx::train {

EvaluationResult evaluate(nn::Model& model, const data::Split& split, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation,
                          const comm::Communicator& communicator, int batch_size) {
  Stopwatch stopwatch;
  auto& backend = model.backend();
  const auto [begin, end] =
      data::ShardPlan::evaluation_range(split.count, communicator.rank(), communicator.size());
  const std::int64_t image_bytes = split.image_bytes();
  Tensor mean_tensor(backend, Shape{static_cast<std::int64_t>(mean.size())});
  Tensor deviation_tensor(backend, Shape{static_cast<std::int64_t>(standard_deviation.size())});
  backend.copy_from_host(mean_tensor.data(), mean.data(), mean.size() * sizeof(float));
  backend.copy_from_host(deviation_tensor.data(), standard_deviation.data(),
                         standard_deviation.size() * sizeof(float));
  Tensor images(backend, Shape{batch_size, split.height, split.width, split.channels}, DType::UInt8);
  Tensor input(backend, Shape{batch_size, split.height, split.width, split.channels});
  Tensor labels(backend, Shape{batch_size}, DType::Int32);

  double sums[2] = {0, 0};  // loss sum, correct
  std::int64_t count = 0;
  nn::ForwardContext context;
  context.mode = nn::Mode::Evaluation;
  context.rank = communicator.rank();
  for (std::int64_t first = begin; first < end; first += batch_size) {
    const int size = static_cast<int>(std::min<std::int64_t>(batch_size, end - first));
    const Shape shape{size, split.height, split.width, split.channels};
    images.reshape(shape);
    input.reshape(shape);
    labels.reshape(Shape{size});
    backend.copy_from_host(images.data_as<void>(), split.images.data() + first * image_bytes,
                           static_cast<std::size_t>(size * image_bytes));
    backend.copy_from_host(labels.data_as<void>(), split.labels.data() + first, size * sizeof(std::int32_t));
    backend.normalize_images(images.data_as<std::uint8_t>(),
                             static_cast<std::int64_t>(size) * split.height * split.width, split.channels,
                             mean_tensor.data(), deviation_tensor.data(), input.data());
    const Tensor& logits = model.forward(input, context);
    const auto totals = backend.softmax_cross_entropy(size, model.classes(), logits.data(),
                                                      labels.data_as<std::int32_t>(), 0.0f, 1.0f, nullptr);
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
