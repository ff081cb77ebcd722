// Estimate against limit, on CPU ranks, where the kernel overcommits memory and a run that takes
// too much is killed mid-step. The estimate counts the activation buffers the layers allocate
// (not oneDNN's own scratch memory); the limit is read from the kernel's own accounting at start,
// so a run it lets through may still meet another process that grows later.
#include "setup/memory_check.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "phalanx/core/error.hpp"

namespace phalanx::train {
namespace {

constexpr double gibibyte = 1024.0 * 1024.0 * 1024.0;

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / gibibyte);
  return text;
}

// A "Key:   123 kB" line of a /proc file, in bytes; empty when absent.
std::optional<std::size_t> proc_kilobytes(const std::string& path, const std::string& key) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    std::size_t kilobytes = 0;
    if (fields >> kilobytes) return kilobytes * 1024;
  }
  return std::nullopt;
}

// A cgroup v2 file holding one number ("max" for no limit); empty when absent or unlimited.
std::optional<std::size_t> cgroup_number(const std::string& name) {
  std::ifstream file("/sys/fs/cgroup/" + name);
  std::string text;
  if (!(file >> text) || text == "max") return std::nullopt;
  try {
    return static_cast<std::size_t>(std::stoull(text));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void tighten(std::optional<MemoryLimit>& limit, std::size_t bytes, std::string source) {
  if (!limit || bytes < limit->bytes) limit = MemoryLimit{bytes, std::move(source)};
}

}  // namespace

std::optional<MemoryLimit> memory_available_to_rank(backend::Backend& backend, int ranks_on_node) {
  std::optional<MemoryLimit> limit;
  // A GPU refuses an allocation it cannot make (an error naming the rank, never a kill), and
  // train.batch_size: auto fills it on purpose up to its margin: only host memory is checked.
  if (backend.device_memory()) return limit;
  const auto ranks = static_cast<std::size_t>(std::max(ranks_on_node, 1));
  const std::string shared = ranks > 1 ? " shared by " + std::to_string(ranks) + " ranks on this node" : "";
  if (const auto available = proc_kilobytes("/proc/meminfo", "MemAvailable"))
    tighten(limit, *available / ranks, "the node's available memory (" + gib(*available) + shared + ")");
  if (const auto maximum = cgroup_number("memory.max")) {
    const std::size_t used = cgroup_number("memory.current").value_or(0);
    const std::size_t free = *maximum > used ? *maximum - used : 0;
    tighten(limit, free / ranks,
            "the cgroup's memory.max of " + gib(*maximum) + " less " + gib(used) + " in use" + shared);
  }
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    const std::size_t mapped = proc_kilobytes("/proc/self/status", "VmSize").value_or(0);
    const auto maximum = static_cast<std::size_t>(address_space.rlim_cur);
    tighten(limit, maximum > mapped ? maximum - mapped : 0,
            "the address-space limit (ulimit -v) of " + gib(maximum) + " less " + gib(mapped) +
                " this process maps already");
  }
  return limit;
}

StepMemory step_memory(const nn::Model& model, std::int64_t micro_batch, std::int64_t local_batch,
                       int prefetch_batches, std::int64_t gathered_sample_bytes) {
  const std::int64_t per_sample = model.network().sample_activation_elements() +
                                  2 * model.sample_shape().elements() + 2 * model.classes();
  const std::int64_t floats = per_sample * micro_batch;
  // The loader's ring holds raw uint8 batches of the whole local batch.
  const std::int64_t ring =
      (std::int64_t{prefetch_batches} + 2) * local_batch * model.sample_shape().elements() +
      local_batch * gathered_sample_bytes;
  return {static_cast<std::size_t>(floats) * sizeof(float), static_cast<std::size_t>(ring),
          static_cast<std::size_t>(local_batch * model.sample_shape().elements()), prefetch_batches};
}

std::size_t model_state_bytes(const nn::ModelSize& size, std::size_t optimizer_states) {
  const auto parameters = static_cast<std::size_t>(size.parameter_elements);
  return ((2 + optimizer_states) * parameters + static_cast<std::size_t>(size.buffer_elements)) *
         sizeof(float);
}

void require_model_state_fits(std::size_t needed, const std::optional<MemoryLimit>& limit,
                              const nn::ModelSize& size, const std::string& model_key,
                              const std::string& optimizer, const std::string& device) {
  if (!limit || needed <= limit->bytes) return;
  throw_input_error(model_key + ": the model's " + std::to_string(size.parameters) +
                    " parameters need about " + gib(needed) + " on this rank (" + device +
                    ") for the weights, their gradients and the optimizer state (" + optimizer +
                    "), more than the " + gib(limit->bytes) + " it can still use: " + limit->source +
                    "; use a smaller model (fewer or narrower layers in " + model_key +
                    ") or give the rank more memory");
}

void require_memory_fits(const StepMemory& step, const std::optional<MemoryLimit>& limit,
                         std::int64_t local_batch, int micro_batches, const std::string& device) {
  const std::size_t needed = step.total();
  if (!limit || needed <= limit->bytes) return;
  // The ring holds whole raw batches, prefetched: fewer of them, not a smaller batch, is the cure
  // where they are most of what does not fit and one prefetched batch would fit.
  const std::size_t with_one_prefetched =
      needed - static_cast<std::size_t>(std::max(step.prefetch_batches - 1, 0)) * step.raw_batch;
  if (step.loader_ring > step.activations && step.prefetch_batches > 1 && with_one_prefetched <= limit->bytes)
    throw_input_error("data.prefetch_batches: the loader's ring of " + std::to_string(step.prefetch_batches) +
                      " prefetched batches (and two in use) of " + std::to_string(local_batch) +
                      " raw samples needs about " + gib(step.loader_ring) + " on this rank (" + device +
                      "), and a training step " + gib(needed) + " in all, more than the " +
                      gib(limit->bytes) + " it can still use: " + limit->source +
                      "; lower data.prefetch_batches");
  const std::int64_t micro_batch = (local_batch + micro_batches - 1) / micro_batches;
  const double ratio =
      static_cast<double>(needed) / static_cast<double>(std::max<std::size_t>(limit->bytes, 1));
  throw_input_error("train.batch_size: a training step at a local batch of " + std::to_string(local_batch) +
                    (micro_batches > 1 ? " (" + std::to_string(micro_batches) + " micro-batches of up to " +
                                             std::to_string(micro_batch) + ")"
                                       : std::string()) +
                    " needs about " + gib(needed) + " of activations on this rank (" + device +
                    "), more than the " + gib(limit->bytes) + " it can still use: " + limit->source +
                    "; lower train.batch_size, or set train.accumulation_steps to at least " +
                    std::to_string(static_cast<std::int64_t>(micro_batches * ratio) + 1) +
                    " to train the batch in micro-batches");
}

}  // namespace phalanx::train
