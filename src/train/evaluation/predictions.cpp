// Batch inference over a split and the predictions file.
#include "phalanx/train/predictions.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/data/hdf5_handle.hpp"
#include "phalanx/data/hdf5_lock.hpp"
#include "loop/input_batch.hpp"

namespace phalanx::train {

using data::detail::Hdf5Handle;

Predictions predict_split(nn::Model& model, const data::Split& split, const std::vector<float>& mean,
                          const std::vector<float>& standard_deviation, int batch_size) {
  auto& backend = model.backend();
  Predictions result;
  result.classes = model.classes();
  result.predicted_class.resize(static_cast<std::size_t>(split.count));
  result.probabilities.resize(static_cast<std::size_t>(split.count * model.classes()));
  result.labels = split.labels;
  InputBatch inputs(backend, batch_size, split.height, split.width, split.channels, mean, standard_deviation);
  Tensor predicted(backend, Shape{batch_size}, DType::Int32),
      probabilities(backend, Shape{batch_size, model.classes()});
  nn::ForwardContext context;
  context.mode = nn::Mode::Evaluation;
  for (std::int64_t first = 0; first < split.count; first += batch_size) {
    const int size = static_cast<int>(std::min<std::int64_t>(batch_size, split.count - first));
    inputs.load(split.images.data() + first * split.image_bytes(), split.labels.data() + first, size);
    const Tensor& logits = model.forward(inputs.input(), context);
    backend.predict(size, model.classes(), logits.data(), predicted.data_as<std::int32_t>(),
                    probabilities.data());
    backend.copy_to_host(result.predicted_class.data() + first, predicted.data_as<void>(),
                         size * sizeof(std::int32_t));
    backend.copy_to_host(result.probabilities.data() + first * model.classes(), probabilities.data(),
                         static_cast<std::size_t>(size) * model.classes() * sizeof(float));
  }
  return result;
}

namespace {
void write_dataset(hid_t file, const char* name, hid_t file_type, hid_t memory_type,
                   std::vector<hsize_t> dims, const void* data, const std::string& path) {
  Hdf5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Hdf5Handle dataset(H5Dcreate2(file, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                     H5Dclose);
  if (!dataset.valid() || H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    throw_internal_error(path + ": writing " + name + " failed", __FILE__, __LINE__);
}
}  // namespace

void write_predictions(const std::string& path, const Predictions& predictions,
                       const std::vector<std::string>& class_names) {
  const auto hdf5_lock = data::lock_hdf5();
  data::detail::silence_hdf5_error_printing();
  AtomicFile output(path);
  {
    Hdf5Handle file(H5Fcreate(output.temporary_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT),
                    H5Fclose);
    PHALANX_REQUIRE_INPUT(file.valid(), path, ": cannot create the predictions file");
    const hsize_t count = predictions.predicted_class.size();
    write_dataset(file.get(), "/predictions", H5T_STD_I32LE, H5T_NATIVE_INT32, {count},
                  predictions.predicted_class.data(), path);
    write_dataset(file.get(), "/probabilities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT,
                  {count, static_cast<hsize_t>(predictions.classes)}, predictions.probabilities.data(), path);
    write_dataset(file.get(), "/labels", H5T_STD_I32LE, H5T_NATIVE_INT32, {count}, predictions.labels.data(),
                  path);
    // Class names as one variable-length string array attribute, as the dataset files keep them.
    std::vector<const char*> names;
    for (const auto& name : class_names) names.push_back(name.c_str());
    Hdf5Handle string_type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(string_type.get(), H5T_VARIABLE);
    const hsize_t name_count = names.size();
    Hdf5Handle space(H5Screate_simple(1, &name_count, nullptr), H5Sclose);
    Hdf5Handle root(H5Gopen2(file.get(), "/", H5P_DEFAULT), H5Gclose);
    Hdf5Handle attribute(
        H5Acreate2(root.get(), "classes", string_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose);
    if (!attribute.valid() || H5Awrite(attribute.get(), string_type.get(), names.data()) < 0)
      throw_internal_error(path + ": writing the classes attribute failed", __FILE__, __LINE__);
    attribute = Hdf5Handle();
    space = Hdf5Handle();
    root = Hdf5Handle();
    if (!file.close())
      throw_internal_error(path + ": closing the predictions file failed", __FILE__, __LINE__);
  }
  output.commit();
}

}  // namespace phalanx::train
