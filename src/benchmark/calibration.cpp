// Calibration for the scaling model: transport fits, per-layer times from backward's own readiness
// reports, bucket ready times.
#include "phalanx/benchmark/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <random>

#include "phalanx/comm/bucket_plan.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/median.hpp"

namespace phalanx::benchmark {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Tensor random_tensor(backend::Backend& backend, const Shape& shape, std::uint64_t seed) {
  Tensor tensor(backend, shape);
  std::vector<float> values(static_cast<std::size_t>(shape.elements()));
  std::mt19937 generator(static_cast<std::mt19937::result_type>(seed));
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  for (float& value : values) value = distribution(generator);
  backend.copy_from_host(tensor.data(), values.data(), values.size() * sizeof(float));
  return tensor;
}

}  // namespace

TransportFit fit_transport(const std::string& name, int ranks, const std::vector<AllreduceResult>& measured) {
  PHALANX_CHECK(measured.size() >= 2, "a transport fit needs two sizes or more, got ", measured.size());
  double weights = 0, bytes = 0, seconds = 0, bytes_squared = 0, bytes_seconds = 0;
  for (const auto& point : measured) {
    PHALANX_CHECK(point.seconds > 0, "a transport fit needs positive times, got ", point.seconds);
    const double weight = 1.0 / (point.seconds * point.seconds);
    const auto size = static_cast<double>(point.bytes);
    weights += weight;
    bytes += weight * size;
    seconds += weight * point.seconds;
    bytes_squared += weight * size * size;
    bytes_seconds += weight * size * point.seconds;
  }
  const double determinant = weights * bytes_squared - bytes * bytes;
  PHALANX_CHECK(determinant > 0, "a transport fit needs two different sizes");
  TransportFit fit{name, ranks, 0, (weights * bytes_seconds - bytes * seconds) / determinant, measured, {}};
  fit.latency = (seconds - fit.seconds_per_byte * bytes) / weights;
  if (fit.latency < 0 || fit.seconds_per_byte <= 0) {
    fit.latency = 0;
    fit.seconds_per_byte = bytes_seconds / bytes_squared;
  }
  return fit;
}

ModelTimings time_model(nn::Model& model, const scaling::LayerCosts& costs, int batch, int iterations,
                        std::size_t bucket_bytes, std::size_t first_bucket_bytes, optim::Optimizer* optimizer,
                        const std::function<void()>& align) {
  PHALANX_REQUIRE_INPUT(batch >= 1 && iterations >= 1, "calibration needs a batch and iterations >= 1 (got ",
                        batch, " and ", iterations, ")");
  backend::Backend& backend = model.backend();
  const Shape& sample = model.sample_shape();
  const Tensor input = random_tensor(backend, Shape{batch, sample[0], sample[1], sample[2]}, 1);
  Tensor grad_logits = random_tensor(backend, Shape{batch, model.classes()}, 2);
  Tensor labels(backend, Shape{batch}, DType::Int32);
  const std::vector<std::int32_t> zero_labels(static_cast<std::size_t>(batch), 0);
  backend.copy_from_host(labels.data_as<void>(), zero_labels.data(), labels.bytes());
  // The layer whose gradients start at each offset: what a readiness report names.
  std::vector<std::pair<std::int64_t, std::size_t>> by_offset;
  for (std::size_t index = 0; index < costs.layers.size(); ++index)
    if (costs.layers[index].gradient_elements > 0)
      by_offset.emplace_back(costs.layers[index].gradient_offset, index);
  std::sort(by_offset.begin(), by_offset.end());
  const comm::BucketPlan plan(costs.gradient_elements, bucket_bytes, first_bucket_bytes);

  std::vector<std::vector<double>> backward_samples(costs.layers.size()), ready_samples(plan.size());
  std::vector<double> layer_pass_totals;
  nn::ForwardContext context;
  for (int iteration = -2; iteration < iterations; ++iteration) {
    backend.synchronize();
    model.forward(input, context);
    backend.synchronize();
    const double backward_start = now();
    std::vector<double> layer_backward(costs.layers.size(), 0.0), bucket_ready(plan.size(), -1.0);
    double previous = backward_start;
    std::size_t last_layer = costs.layers.empty() ? 0 : costs.layers.size() - 1;
    model.backward(input, grad_logits, [&](std::int64_t first_final_offset) {
      backend.synchronize();
      const double time = now();
      const auto found = std::lower_bound(by_offset.begin(), by_offset.end(),
                                          std::make_pair(first_final_offset, std::size_t{0}));
      if (found != by_offset.end() && found->first == first_final_offset) last_layer = found->second;
      layer_backward[last_layer] += time - previous;
      previous = time;
      for (std::size_t index = 0; index < plan.size(); ++index)
        if (bucket_ready[index] < 0 && plan[index].begin >= first_final_offset)
          bucket_ready[index] = time - backward_start;
    });
    backend.synchronize();
    const double end = now();
    if (!costs.layers.empty()) layer_backward[last_layer] += end - previous;
    if (iteration < 0) continue;
    layer_pass_totals.push_back(end - backward_start);
    for (std::size_t index = 0; index < costs.layers.size(); ++index)
      backward_samples[index].push_back(layer_backward[index]);
    for (std::size_t index = 0; index < plan.size(); ++index)
      ready_samples[index].push_back(bucket_ready[index] < 0 ? end - backward_start : bucket_ready[index]);
  }

  // Whole steps, as training runs them: nothing waits inside backward.
  ModelTimings timings;
  timings.batch = batch;
  timings.iterations = iterations;
  std::vector<double> forward_samples, backward_samples_whole, optimizer_samples;
  for (int iteration = -2; iteration < iterations; ++iteration) {
    backend.synchronize();
    if (align) align();
    const double start = now();
    const Tensor& logits = model.forward(input, context);
    backend.softmax_cross_entropy(batch, model.classes(), logits.data(), labels.data_as<std::int32_t>(), 0.0f,
                                  1.0f / static_cast<float>(batch), grad_logits.data());
    backend.synchronize();
    const double forward_end = now();
    model.backward(input, grad_logits, {});
    backend.synchronize();
    const double backward_end = now();
    // A small rate: the weights only have to stay finite over the calibration's updates.
    if (optimizer) optimizer->step(model.registry(), 1e-5, iteration + 3);
    backend.synchronize();
    const double end = now();
    if (iteration < 0) continue;
    forward_samples.push_back(forward_end - start);
    backward_samples_whole.push_back(backward_end - forward_end);
    optimizer_samples.push_back(end - backward_end);
    timings.steps.push_back(end - start);
  }
  timings.forward = median(forward_samples);
  timings.backward = median(backward_samples_whole);
  timings.optimizer = optimizer ? median(optimizer_samples) : 0.0;

  // The layers and buckets of the layer pass whose backward took the median time: one consistent
  // pass (its layers add up to it), not medians per layer that leave out a preemption no layer owns
  // alone; scaled to the whole steps' backward.
  std::vector<std::size_t> order(layer_pass_totals.size());
  for (std::size_t index = 0; index < order.size(); ++index) order[index] = index;
  std::sort(order.begin(), order.end(), [&](std::size_t left, std::size_t right) {
    return layer_pass_totals[left] < layer_pass_totals[right];
  });
  const std::size_t middle = order[order.size() / 2];
  const double scale = layer_pass_totals[middle] > 0 ? timings.backward / layer_pass_totals[middle] : 1.0;
  const double multiply_adds = std::max<double>(1, static_cast<double>(costs.multiply_adds()));
  for (std::size_t index = 0; index < costs.layers.size(); ++index)
    timings.layers.push_back({costs.layers[index].name,
                              timings.forward * costs.layers[index].multiply_adds / multiply_adds,
                              backward_samples[index][middle] * scale, costs.layers[index].multiply_adds});
  for (std::size_t index = 0; index < plan.size(); ++index)
    timings.buckets.push_back({plan[index].begin, plan[index].end, ready_samples[index][middle] * scale});
  return timings;
}

nlohmann::json profile_json(const std::string& model_name, const std::string& device,
                            const std::string& precision, const ModelTimings& timings,
                            const std::vector<RankSteps>& ranks,
                            const std::vector<TransportFit>& transports) {
  nlohmann::json profile = {{"format", "phalanx-profile"},
                            {"version", 2},
                            {"model", model_name},
                            {"device", device},
                            {"precision", precision},
                            {"batch_size", timings.batch},
                            {"iterations", timings.iterations},
                            {"forward_seconds", timings.forward},
                            {"backward_seconds", timings.backward},
                            {"optimizer_seconds", timings.optimizer},
                            {"ranks", nlohmann::json::array()},
                            {"layers", nlohmann::json::array()},
                            {"buckets", nlohmann::json::array()},
                            {"transports", nlohmann::json::array()}};
  for (const auto& layer : timings.layers)
    profile["layers"].push_back({{"name", layer.name},
                                 {"forward_seconds", layer.forward},
                                 {"backward_seconds", layer.backward},
                                 {"multiply_adds", layer.multiply_adds}});
  for (const auto& bucket : timings.buckets)
    profile["buckets"].push_back(
        {{"begin", bucket.begin}, {"end", bucket.end}, {"ready_seconds", bucket.ready}});
  for (const auto& rank : ranks)
    profile["ranks"].push_back({{"rank", rank.rank}, {"host", rank.host}, {"step_seconds", rank.steps}});
  for (const auto& transport : transports) {
    nlohmann::json measured = nlohmann::json::array();
    for (std::size_t index = 0; index < transport.measured.size(); ++index) {
      const AllreduceResult& point = transport.measured[index];
      measured.push_back({{"bytes", point.bytes}, {"seconds", point.seconds}});
      if (index < transport.progress.size()) {
        PHALANX_CHECK(transport.progress[index].bytes == point.bytes,
                      "progress stages out of step with the sizes");
        measured.back()["stages"] = transport.progress[index].stages;
        measured.back()["seconds_in_calls"] = transport.progress[index].seconds_in_calls;
      }
    }
    profile["transports"].push_back({{"name", transport.name},
                                     {"ranks", transport.ranks},
                                     {"latency_seconds", transport.latency},
                                     {"seconds_per_byte", transport.seconds_per_byte},
                                     {"measured", measured}});
  }
  return profile;
}

}  // namespace phalanx::benchmark
