// Gradient accumulation: how many micro-batches a rank's local batch takes (explicit, or auto:
// only an even split above train.batch_size, which a resume on fewer ranks gives) and how the
// local batch is cut into them. The update itself is checked end to end
// (tests/end_to_end/test_gradient_accumulation.py, against the run without accumulation).
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "phalanx/backend/backend.hpp"
#include "phalanx/config/config.hpp"
#include "phalanx/core/error.hpp"
#include "loop/micro_batches.hpp"

namespace phalanx::train {
namespace {

TEST(MicroBatches, ExplicitCountsAreTakenUpToOnePerSample) {
  EXPECT_EQ(micro_batch_count(3, 24, 24, true), 3);
  EXPECT_EQ(micro_batch_count(3, 24, 8, false), 3);
  EXPECT_EQ(micro_batch_count(1, 96, 24, true), 1);
  EXPECT_EQ(micro_batch_count(40, 24, 24, true), 24);
}

TEST(MicroBatches, AutoSplitsOnlyAnEvenSplitAboveTheBatchSize) {
  EXPECT_EQ(micro_batch_count(0, 64, 64, true), 1);   // a run on its own ranks
  EXPECT_EQ(micro_batch_count(0, 128, 64, true), 2);  // 4 ranks of 64 resumed on 2
  EXPECT_EQ(micro_batch_count(0, 48, 16, true), 3);   // 3 ranks of 16 resumed on 1
  EXPECT_EQ(micro_batch_count(0, 17, 16, true), 2);   // 2 ranks of 16 plus one sample, uneven
  EXPECT_EQ(micro_batch_count(0, 13, 50, true), 1);   // on more ranks: smaller local batches
  // A throughput split gives a fast rank a larger batch on purpose: trained in one piece.
  EXPECT_EQ(micro_batch_count(0, 230, 128, false), 1);
}

config::Config config_of(const std::string& train, const std::string& distributed = "{}") {
  return config::parse("model: {preset: fmnist_cnn}\ndata: {path: fashion.h5}\ntrain: " + train +
                           "\ndistributed: " + distributed + "\n",
                       "micro.yaml");
}

// What the Trainer splits a step into and what the start-up probes resolve arithmetic for: the
// config's accumulation, split and batch size applied to a local batch.
TEST(MicroBatches, PerStepFollowsTheConfig) {
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16}"), 16), 1);
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16}"), 48), 3);  // resumed on a third of the ranks
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16, accumulation_steps: 2}"), 16), 2);
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16, accumulation_steps: 2}"), 1), 1);
  // A throughput split or explicit local batches are meant as they are.
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16}", "{batch_split: throughput}"), 48), 1);
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: 16}", "{local_batches: [48, 16]}"), 48), 1);
  EXPECT_EQ(micro_batches_per_step(
                config_of("{batch_size: 16, accumulation_steps: 4}", "{batch_split: throughput}"), 48),
            4);
  // train.batch_size: auto: the probed batch is the batch size the run would take, in one piece
  // unless accumulation is asked for.
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: auto}"), 512), 1);
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: auto, accumulation_steps: 2}"), 512), 2);
  EXPECT_EQ(micro_batches_per_step(config_of("{batch_size: auto, accumulation_steps: 2}"), 1), 1);
}

TEST(MicroBatches, CutsTheLocalBatchAsEvenlyAsItDivides) {
  const auto backend = backend::make_cpu_backend(1);
  const MicroBatches five(*backend, 24, 5, 10, 100, 2);
  EXPECT_EQ(five.sizes(), (std::vector<int>{5, 5, 5, 5, 4}));
  EXPECT_EQ(five.last_size(), 4);
  const MicroBatches three(*backend, 24, 3, 10, 100, 2);
  EXPECT_EQ(three.sizes(), (std::vector<int>{8, 8, 8}));
  // Each micro-batch draws its own dropout masks: the ranks' streams, spaced by the world size.
  const nn::ForwardContext step{nn::Mode::Training, 7, 11, 1};
  EXPECT_EQ(three.context_of(0, step).rank, 1);
  EXPECT_EQ(three.context_of(2, step).rank, 5);
  EXPECT_EQ(three.context_of(2, step).step, 11);
  EXPECT_THROW(MicroBatches(*backend, 3, 4, 10, 100, 1), Error);
  EXPECT_THROW(MicroBatches(*backend, 3, 0, 10, 100, 1), Error);
}

TEST(MicroBatches, OneMicroBatchTrainsTheStepInPlace) {
  // A step without accumulation: its input and labels are the last micro-batch's as they are, its
  // context the step's, and nothing is summed aside.
  const auto backend = backend::make_cpu_backend(1);
  MicroBatches one(*backend, 6, 1, 3, 4, 2);
  const Tensor input(*backend, Shape{6, 2, 2, 1});
  const std::int32_t labels[6] = {0, 1, 2, 0, 1, 2};
  const nn::ForwardContext step{nn::Mode::Training, 7, 11, 1};
  const std::int32_t partners[6] = {2, 1, 0, 2, 1, 0};
  const MicroBatch last = one.last(input, labels, {partners, 0.25f}, step);
  EXPECT_EQ(&last.input, &input);
  EXPECT_EQ(last.labels, labels);
  EXPECT_EQ(last.mix.partner_labels, partners);
  EXPECT_EQ(last.mix.own_weight, 0.25f);
  EXPECT_EQ(last.samples, 6);
  EXPECT_EQ(last.grad_logits.shape(), (Shape{6, 3}));
  EXPECT_EQ(last.context.rank, 1);
  float gradients[4] = {1, 2, 3, 4};
  one.add_summed(0, gradients);
  EXPECT_EQ(gradients[0], 1);
  EXPECT_EQ(gradients[3], 4);
}

TEST(MicroBatches, TheLastMicroBatchTakesItsOwnPartnerLabels) {
  // A mixed step is mixed over the whole local batch: the last micro-batch's partner labels start
  // where its samples do, as its labels do; an unmixed step stays without.
  const auto backend = backend::make_cpu_backend(1);
  MicroBatches three(*backend, 7, 3, 3, 4, 1);  // sizes 3, 2, 2
  const Tensor input(*backend, Shape{7, 2, 2, 1});
  const std::int32_t labels[7] = {0, 1, 2, 0, 1, 2, 0};
  const std::int32_t partners[7] = {0, 2, 1, 0, 2, 1, 0};
  const nn::ForwardContext step{nn::Mode::Training, 7, 11, 0};
  const MicroBatch mixed = three.last(input, labels, {partners, 0.6f}, step);
  EXPECT_EQ(mixed.labels, labels + 5);
  EXPECT_EQ(mixed.mix.partner_labels, partners + 5);
  EXPECT_EQ(mixed.mix.own_weight, 0.6f);
  EXPECT_EQ(three.last(input, labels, {}, step).mix.partner_labels, nullptr);
}

}  // namespace
}  // namespace phalanx::train
