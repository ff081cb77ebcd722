// apply_arithmetic: what train.precision and train.activation_dtype set on a rank's backend, and that
// the start-up probe step (auto batch size, throughput split) runs under them as training does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/backend_test_support.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/train/arithmetic.hpp"
#include "loop/micro_batches.hpp"
#include "setup/probe_step.hpp"

namespace phalanx::testing {
namespace {

// `more_train`: further train keys, e.g. ", accumulation_steps: 2".
config::Config config_with(const std::string& precision, const std::string& activation_dtype,
                           const std::string& more_train = "") {
  return config::parse(
      "model: {preset: fmnist_cnn}\ndata: {path: fashion.h5}\ntrain: {batch_size: 8, precision: " +
          precision + ", activation_dtype: " + activation_dtype + more_train + "}\n",
      "probe.yaml");
}

// Whether the backend holds bf16 activations (under bf16 compute), as it says itself. Where CTest
// lowers oneDNN below AVX-512 (ArithmeticSetupIsa.AVX2, PHALANX_EXPECTED_BF16=unavailable) it must
// say no, so that run cannot pass on the other branch.
bool holds_bf16_activations(const backend::Backend& backend) {
  const bool held =
      backend.can_hold_activations(backend::ComputePrecision::BFloat16, backend::ComputePrecision::BFloat16);
  const char* expected = std::getenv("PHALANX_EXPECTED_BF16");
  if (expected && std::string(expected) == "unavailable") {
    EXPECT_FALSE(held) << "ONEDNN_MAX_CPU_ISA not applied";
  }
  return held;
}

// The InvalidInput message of `call`, or "" when it does not throw one.
template <typename Call>
std::string invalid_input_message(Call call) {
  try {
    call();
  } catch (const Error& error) {
    if (error.kind() == ErrorKind::InvalidInput) return error.what();
    throw;
  }
  return "";
}

// A CPU rank computes in fp32 or bf16, and holds activations in bf16 under bf16 compute where
// oneDNN has bf16 kernels (AVX-512; refused naming the key below it); fp16 is refused naming the key.
TEST(ArithmeticSetup, CpuRankTakesFp32AndBf16AndRefusesTheRestNamingTheKey) {
  const auto backend = make_test_backend();
  EXPECT_NO_THROW(train::apply_arithmetic(config_with("fp32", "fp32"), *backend));
  EXPECT_EQ(backend->arithmetic_note(), "");
  EXPECT_NO_THROW(train::apply_arithmetic(config_with("bf16", "fp32"), *backend));
  EXPECT_NE(backend->arithmetic_note().find("bf16"), std::string::npos) << backend->arithmetic_note();
  const bool bf16_unavailable = !holds_bf16_activations(*backend);
  const std::string activations =
      invalid_input_message([&] { train::apply_arithmetic(config_with("bf16", "bf16"), *backend); });
  if (bf16_unavailable) {
    // The backend's own reason, after the key that asked for it.
    EXPECT_TRUE(
        activations.ends_with("train.activation_dtype: bf16: " +
                              backend->activation_precision_refusal(backend::ComputePrecision::BFloat16,
                                                                    backend::ComputePrecision::BFloat16)))
        << activations;
    EXPECT_NE(activations.find("AVX-512"), std::string::npos) << activations;
  } else {
    EXPECT_EQ(activations, "");
  }
  const std::string precision =
      invalid_input_message([&] { train::apply_arithmetic(config_with("fp16", "fp32"), *backend); });
  EXPECT_NE(precision.find("train.precision: fp16"), std::string::npos) << precision;
  // Back to fp32 (from bf16 activations too, where they were taken), nothing left of bf16.
  if (!bf16_unavailable) {
    EXPECT_NO_THROW(train::apply_arithmetic(config_with("bf16", "bf16"), *backend));
  }
  EXPECT_NO_THROW(train::apply_arithmetic(config_with("fp32", "fp32"), *backend));
  EXPECT_EQ(backend->arithmetic_note(), "");
}

// train.precision: auto is the backend's preferred precision (which rule picks it is the backend
// tests' concern), with its reason on the rank's line; auto activations follow the compute
// precision, except under micro-batches (fp32 elements) and where the backend cannot hold them.
// Named precisions pass through unresolved.
TEST(ArithmeticSetup, AutoTakesTheBackendsPreferredPrecision) {
  const auto backend = make_test_backend();
  const backend::PrecisionChoice choice = backend->preferred_precision();
  const std::string expected = backend::compute_precision_name(choice.precision);
  ASSERT_TRUE(expected == "bf16" || expected == "fp32") << expected;
  EXPECT_FALSE(choice.reason.empty());

  const config::Config automatic = config_with("auto", "auto");
  const train::Arithmetic one = train::apply_arithmetic(automatic, *backend);
  EXPECT_EQ(config::name_of(one.precision), expected) << choice.reason;
  EXPECT_EQ(config::name_of(one.activation_dtype), expected) << choice.reason;
  EXPECT_EQ(one.precision_reason, choice.reason);
  EXPECT_EQ(train::describe_resolution(automatic.train, one),
            "train.precision auto: " + expected + " (" + choice.reason +
                "), train.activation_dtype auto: " + expected);
  // The backend computes in what auto chose: its note speaks of bf16 exactly when bf16 was chosen.
  EXPECT_EQ(backend->arithmetic_note().find("bf16") != std::string::npos, expected == "bf16")
      << backend->arithmetic_note();

  const train::Arithmetic split = train::apply_arithmetic(automatic, *backend, 2);
  EXPECT_EQ(config::name_of(split.precision), expected);
  EXPECT_EQ(config::name_of(split.activation_dtype), "fp32");

  // auto activations under a named precision: that precision where the backend holds it
  // (every AVX-512 CPU for bf16), fp32 where it does not, instead of a refusal.
  const bool bf16_unavailable = !holds_bf16_activations(*backend);
  const train::Arithmetic named = train::apply_arithmetic(config_with("bf16", "auto"), *backend);
  EXPECT_EQ(config::name_of(named.precision), "bf16");
  EXPECT_EQ(config::name_of(named.activation_dtype), bf16_unavailable ? "fp32" : "bf16");
  EXPECT_EQ(train::describe_resolution(config_with("bf16", "auto").train, named),
            "train.activation_dtype auto: " + config::name_of(named.activation_dtype));
  EXPECT_EQ(train::apply_arithmetic(config_with("fp32", "auto"), *backend).activation_dtype, config::Precision::Fp32);

  // Nothing auto: nothing to describe, the names as given.
  const config::Config fp32 = config_with("fp32", "fp32");
  const train::Arithmetic plain = train::apply_arithmetic(fp32, *backend);
  EXPECT_EQ(config::name_of(plain.precision), "fp32");
  EXPECT_EQ(train::describe_resolution(fp32.train, plain), "");
  EXPECT_EQ(backend->arithmetic_note(), "");
}

// activation_dtype: auto asks the backend (Backend::can_hold_activations) instead of trying:
// resolving changes nothing on the backend, and where it cannot hold bf16 activations (below
// AVX-512) auto under bf16 resolves to fp32 before anything is set.
TEST(ArithmeticSetup, AutoActivationsAskTheBackendWithoutSettingAnything) {
  const auto backend = make_test_backend();
  const bool held = holds_bf16_activations(*backend);
  train::apply_arithmetic(config_with("fp32", "fp32"), *backend);
  const config::Config named = config_with("bf16", "auto");
  const train::Arithmetic resolved = train::resolve_arithmetic(named.train, *backend, 1);
  EXPECT_EQ(config::name_of(resolved.precision), "bf16");
  EXPECT_EQ(config::name_of(resolved.activation_dtype), held ? "bf16" : "fp32");
  // Still fp32 compute: nothing was set to find out.
  EXPECT_EQ(backend->arithmetic_note(), "");
  EXPECT_EQ(train::resolve_arithmetic(named.train, *backend, 2).activation_dtype, config::Precision::Fp32);
  EXPECT_EQ(train::apply_arithmetic(named, *backend).activation_dtype, resolved.activation_dtype);
}

// An activation_dtype named outright that the backend cannot hold is refused before the backend
// changes: it keeps the arithmetic it had (fp32 compute here, no bf16 note).
TEST(ArithmeticSetup, RefusedActivationsLeaveTheBackendAsItWas) {
  const auto backend = make_test_backend();
  if (holds_bf16_activations(*backend))
    GTEST_SKIP() << "this CPU holds bf16 activations (see ArithmeticSetupIsa.AVX2)";
  train::apply_arithmetic(config_with("fp32", "fp32"), *backend);
  const std::string message =
      invalid_input_message([&] { train::apply_arithmetic(config_with("bf16", "bf16"), *backend); });
  EXPECT_NE(message.find("train.activation_dtype: bf16: "), std::string::npos) << message;
  EXPECT_EQ(backend->arithmetic_note(), "");
}

// The probes measure the steps training will take: a probe runs under the configured precision
// (bf16 on a CPU rank), and one asked for what the rank refuses is refused as training would be,
// instead of quietly measuring an fp32 step.
TEST(ArithmeticSetup, ProbeStepRunsUnderTheConfiguredPrecision) {
  const auto backend = make_test_backend();
  const Shape sample{28, 28, 1};
  // The probe keeps a reference to its config.
  const config::Config fp32 = config_with("fp32", "fp32"), bf16 = config_with("bf16", "fp32"),
                       bf16_activations = config_with("bf16", "bf16");
  train::ProbeStep fp32_probe(fp32, *backend, sample, 10, 8);
  EXPECT_NO_THROW(fp32_probe.run());
  EXPECT_EQ(backend->arithmetic_note(), "");
  train::ProbeStep bf16_probe(bf16, *backend, sample, 10, 8);
  EXPECT_NO_THROW(bf16_probe.run());
  EXPECT_NE(backend->arithmetic_note().find("bf16"), std::string::npos) << backend->arithmetic_note();
  const std::string message = invalid_input_message([&] {
    train::ProbeStep probe(bf16_activations, *backend, sample, 10, 8);
    probe.run();
  });
  // Where the CPU takes bf16 activations the probe runs with them; elsewhere it is refused as
  // training would be.
  if (!holds_bf16_activations(*backend)) {
    EXPECT_NE(message.find("train.activation_dtype: bf16"), std::string::npos) << message;
  } else {
    EXPECT_EQ(message, "");
  }
}

// A probe resolves activation_dtype: auto for the micro-batches the run will split its step into
// (micro_batches_per_step), not for one: with train.accumulation_steps: 2 the run holds fp32
// activations, and so does its probe; a batch of one sample is one micro-batch whatever is asked.
TEST(ArithmeticSetup, ProbeStepResolvesAutoForTheRunsMicroBatches) {
  const auto backend = make_test_backend();
  const Shape sample{28, 28, 1};
  const std::string reduced = holds_bf16_activations(*backend) ? "bf16" : "fp32";
  const config::Config whole = config_with("bf16", "auto"),
                       accumulated = config_with("bf16", "auto", ", accumulation_steps: 2"),
                       automatic = config_with("auto", "auto", ", accumulation_steps: 2");
  train::ProbeStep whole_probe(whole, *backend, sample, 10, 8);
  EXPECT_EQ(config::name_of(whole_probe.arithmetic().activation_dtype), reduced);
  EXPECT_NO_THROW(whole_probe.run());
  train::ProbeStep accumulated_probe(accumulated, *backend, sample, 10, 8);
  EXPECT_EQ(config::name_of(accumulated_probe.arithmetic().precision), "bf16");
  EXPECT_EQ(config::name_of(accumulated_probe.arithmetic().activation_dtype), "fp32");
  EXPECT_NO_THROW(accumulated_probe.run());
  train::ProbeStep single_sample(accumulated, *backend, sample, 10, 1);
  EXPECT_EQ(config::name_of(single_sample.arithmetic().activation_dtype), reduced);
  train::ProbeStep automatic_probe(automatic, *backend, sample, 10, 8);
  EXPECT_EQ(config::name_of(automatic_probe.arithmetic().activation_dtype), "fp32");
  // The Trainer's own resolution for the same rank: the probe measures what training holds.
  EXPECT_EQ(automatic_probe.arithmetic().activation_dtype,
            train::resolve_arithmetic(automatic.train, *backend, train::micro_batches_per_step(automatic, 8))
                .activation_dtype);
}

}  // namespace
}  // namespace phalanx::testing
