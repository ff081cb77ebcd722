// One thread per element of the first half of the pairs (sample i < its partner batch - 1 - i, and
// the middle sample of an odd batch): it reads both values before writing either, so the batch is
// mixed in place as timm mixes it from a flipped copy. Mixup rounds each product and the sum on
// their own (__fmul_rn, __fadd_rn: nvcc would fuse them into an FMA), as torch and the CPU backend.
#include "batch_mixing.hpp"
#include "cuda_check.hpp"
#include "launch.hpp"
#include "stored_value.hpp"

namespace phalanx::backend::cuda {
namespace {

__device__ float blend(float own, float partner, float own_weight, float partner_weight) {
  return __fadd_rn(__fmul_rn(own, own_weight), __fmul_rn(partner, partner_weight));
}

template <typename Stored>
__global__ void mixup_kernel(MixGeometry geometry, Stored* images, std::int64_t image_elements,
                             std::int64_t count) {
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t first = index / image_elements, element = index % image_elements;
    Stored* own = images + first * image_elements + element;
    Stored* partner = images + (geometry.batch - 1 - first) * image_elements + element;
    const float own_value = widen(*own), partner_value = widen(*partner);
    *own = narrow<Stored>(blend(own_value, partner_value, geometry.own_weight, geometry.partner_weight));
    if (own != partner)
      *partner =
          narrow<Stored>(blend(partner_value, own_value, geometry.own_weight, geometry.partner_weight));
  }
}

// Swaps the box between each sample of the first half and its partner (the middle one stays).
template <typename Stored>
__global__ void cutmix_kernel(MixGeometry geometry, Stored* images, std::int64_t box_elements,
                              std::int64_t count) {
  const int box_width = geometry.box_right - geometry.box_left;
  const std::int64_t row_elements = static_cast<std::int64_t>(geometry.width) * geometry.channels;
  const std::int64_t image_elements = row_elements * geometry.height;
  for (std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < count;
       index += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t first = index / box_elements, in_box = index % box_elements;
    const int channel = static_cast<int>(in_box % geometry.channels);
    const std::int64_t box_pixel = in_box / geometry.channels;
    const int x = geometry.box_left + static_cast<int>(box_pixel % box_width);
    const int y = geometry.box_top + static_cast<int>(box_pixel / box_width);
    const std::int64_t offset = y * row_elements + static_cast<std::int64_t>(x) * geometry.channels + channel;
    Stored* own = images + first * image_elements + offset;
    Stored* partner = images + (geometry.batch - 1 - first) * image_elements + offset;
    const Stored kept = *own;
    *own = *partner;
    *partner = kept;
  }
}

__global__ void partner_labels_kernel(int batch, const std::int32_t* labels, std::int32_t* partner_labels) {
  const int sample = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (sample < batch) partner_labels[sample] = labels[batch - 1 - sample];
}

}  // namespace

void launch_mix_batch(cudaStream_t stream, ComputePrecision storage, const MixGeometry& geometry,
                      float* images, const std::int32_t* labels, std::int32_t* partner_labels) {
  if (geometry.batch <= 0) return;
  partner_labels_kernel<<<(geometry.batch + threads_per_block - 1) / threads_per_block, threads_per_block, 0,
                          stream>>>(geometry.batch, labels, partner_labels);
  PHALANX_CUDA_LAUNCHED("partner_labels_kernel");
  const std::int64_t image_elements =
      static_cast<std::int64_t>(geometry.height) * geometry.width * geometry.channels;
  if (geometry.kind == MixKind::Mixup) {
    const std::int64_t count = static_cast<std::int64_t>((geometry.batch + 1) / 2) * image_elements;
    if (count <= 0) return;
    with_stored_type(storage, [&](auto tag) {
      using Stored = StoredOf<decltype(tag)>;
      mixup_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(geometry, stored<Stored>(images),
                                                                         image_elements, count);
    });
    PHALANX_CUDA_LAUNCHED("mixup_kernel");
    return;
  }
  const std::int64_t box_elements = static_cast<std::int64_t>(geometry.box_bottom - geometry.box_top) *
                                    (geometry.box_right - geometry.box_left) * geometry.channels;
  const std::int64_t count = static_cast<std::int64_t>(geometry.batch / 2) * box_elements;
  if (count <= 0) return;
  with_stored_type(storage, [&](auto tag) {
    using Stored = StoredOf<decltype(tag)>;
    cutmix_kernel<<<grid_blocks(count), threads_per_block, 0, stream>>>(geometry, stored<Stored>(images),
                                                                        box_elements, count);
  });
  PHALANX_CUDA_LAUNCHED("cutmix_kernel");
}

}  // namespace phalanx::backend::cuda
