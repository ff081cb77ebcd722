// Weights from elsewhere: a safetensors file (PyTorch's state_dict, torch names "a.b.c") or a
// phalanx checkpoint ("a/b/c"), matched by name and shape to a model's parameters and batch-norm
// buffers. `phalanx checkpoint import` and `model.init_from` both go through here.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "phalanx/backend/backend.hpp"
#include "phalanx/core/shape.hpp"
#include "phalanx/nn/parameter_registry.hpp"

namespace phalanx::train {

struct StoredTensor {
  std::string stored_name;  // as the file spells it, for messages
  Shape shape;
  std::vector<float> values;
};

struct StoredWeights {
  std::string path;
  std::map<std::string, StoredTensor> tensors;  // by phalanx name ("layer1/0/conv1/weight")
};

// Reads every tensor of `path`: a phalanx checkpoint (recognised by its seal or HDF5 signature,
// seal and checksums checked) or else a safetensors file. Batch norm's num_batches_tracked is left
// out (phalanx does not keep it); a name that two spellings map to one phalanx name is refused.
StoredWeights read_stored_weights(const std::string& path);

// The classifier head of a model: the parameters of the last layer that has parameters (the
// layer that computes the logits in every preset: fc, classifier/N), given that its weight's
// first dimension is the class count; empty otherwise.
std::vector<std::string> classifier_head(const nn::ParameterRegistry& registry, int classes);

enum class HeadMismatch {
  Refuse,        // every tensor must match (import)
  Reinitialise,  // a head tensor that differs only in its class dimension keeps its fresh values
};

// Sets every parameter and buffer of `registry` from `weights`. Refused (InvalidInput naming the
// file, the tensor and both shapes) when the model has a tensor the file lacks, the file has one
// the model lacks, or shapes differ, except as `head` allows for the tensors named in
// `head_names`. Nothing is written to the registry unless every tensor matches. Returns the
// names of the head tensors that kept their fresh values.
std::vector<std::string> assign_weights(const StoredWeights& weights, backend::Backend& backend,
                                        nn::ParameterRegistry& registry, HeadMismatch head,
                                        const std::vector<std::string>& head_names = {});

}  // namespace phalanx::train
