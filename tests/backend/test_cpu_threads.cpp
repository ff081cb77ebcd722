// The CPU backend's own loops give bitwise the same results for any thread count (fixed
// per-element work or fixed reduction blocks), and every op repeats bitwise for a fixed count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>

#include "backend/backend_test_support.hpp"

namespace phalanx::testing {
namespace {

// Runs the own-loop ops on one backend and returns every output concatenated.
std::vector<float> run_own_loops(backend::Backend& backend) {
  std::vector<float> results;
  const auto append = [&](const std::vector<float>& values) {
    results.insert(results.end(), values.begin(), values.end());
  };

  const std::int64_t count = 100003;  // above the parallel threshold
  const auto input = random_values(count, 1);
  std::vector<float> output(count);
  std::vector<std::uint8_t> mask(count);
  backend.dropout_forward(count, 0.4f, 3, 4, input.data(), output.data(), mask.data());
  append(output);

  const backend::BatchNormGeometry geometry{16, 32, 196, 1e-5f};  // 3136 rows: 13 blocks
  const auto bn_input = random_values(std::size_t(16) * 196 * 32, 2);
  const auto grad_output = random_values(bn_input.size(), 3);
  const std::vector<float> gamma(32, 1.5f), beta(32, 0.25f);
  std::vector<float> running_mean(32, 0.0f), running_variance(32, 1.0f), saved_mean(32),
      saved_inverse_std(32);
  std::vector<float> bn_output(bn_input.size()), grad_input(bn_input.size()), grad_gamma(32), grad_beta(32);
  backend.batch_norm_forward_training(geometry, bn_input.data(), gamma.data(), beta.data(), bn_output.data(),
                                      running_mean.data(), running_variance.data(), 0.1f, saved_mean.data(),
                                      saved_inverse_std.data());
  backend.batch_norm_backward(geometry, bn_input.data(), grad_output.data(), gamma.data(), saved_mean.data(),
                              saved_inverse_std.data(), grad_input.data(), grad_gamma.data(),
                              grad_beta.data());
  for (const auto* values : {&bn_output, &running_mean, &running_variance, &saved_mean, &saved_inverse_std,
                             &grad_input, &grad_gamma, &grad_beta})
    append(*values);

  const int batch = 512, classes = 200;  // large enough for the loss loop to go parallel
  const auto logits = random_values(std::size_t(batch) * classes, 5, -3.0f, 3.0f);
  std::vector<std::int32_t> labels(batch);
  for (int n = 0; n < batch; ++n) labels[n] = n % classes;
  std::vector<float> grad_logits(logits.size());
  const auto totals = backend.softmax_cross_entropy(batch, classes, logits.data(), labels.data(), 0.1f, 0.5f,
                                                    grad_logits.data());
  append(grad_logits);
  results.push_back(static_cast<float>(totals.loss_sum));

  auto parameters = random_values(count, 6);
  std::vector<float> momentum_buffer(count, 0.0f);
  backend.sgd_step(count, backend::SgdHyperparameters{0.1f, 0.9f, 1e-4f, true}, parameters.data(),
                   input.data(), momentum_buffer.data());
  append(parameters);
  return results;
}

TEST(CpuThreads, OwnLoopsGiveTheSameBitsForOneAndTwoThreads) {
  const int previous_threads = omp_get_max_threads();
  auto one_thread = backend::make_cpu_backend(1);
  const auto single = run_own_loops(*one_thread);
  auto two_threads = backend::make_cpu_backend(2);
  const auto dual = run_own_loops(*two_threads);
  omp_set_num_threads(previous_threads);
  ASSERT_EQ(single.size(), dual.size());
  EXPECT_EQ(single, dual);
  EXPECT_NE(two_threads->name().find("2 threads"), std::string::npos) << two_threads->name();
}

TEST(CpuThreads, RepeatsBitwiseForAFixedThreadCount) {
  auto backend = make_test_backend();
  EXPECT_EQ(run_own_loops(*backend), run_own_loops(*backend));
}

}  // namespace
}  // namespace phalanx::testing
