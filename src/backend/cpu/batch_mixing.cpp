// Mixup and CutMix in place: sample i and its partner batch - 1 - i are read before either is
// written, so one pass over the first half of the pairs gives what timm computes from the flipped
// copy. Each product and the sum are rounded on their own (this file is built without FMA
// contraction), as torch's mul_ and add_ round them, and as the CUDA kernel does.
#include "batch_mixing.hpp"

#include "elementwise.hpp"

namespace phalanx::backend::cpu {

namespace {

template <typename Element>
float blend(Element own, Element partner, float own_weight, float partner_weight) {
  const float own_part = widen(own) * own_weight;
  const float partner_part = widen(partner) * partner_weight;
  return own_part + partner_part;
}

template <typename Element>
void mix_batch_of(const MixGeometry& geometry, Element* images, const std::int32_t* labels,
                  std::int32_t* partner_labels) {
  const int batch = geometry.batch;
  for (int sample = 0; sample < batch; ++sample) partner_labels[sample] = labels[batch - 1 - sample];
  const std::int64_t row_elements = static_cast<std::int64_t>(geometry.width) * geometry.channels;
  const std::int64_t image_elements = row_elements * geometry.height;
  // The middle sample of an odd batch is its own partner: CutMix leaves it, Mixup blends it with
  // itself (the rounding of the two products may move it by an ulp, as in torch).
  const int pairs = (batch + 1) / 2;
  if (geometry.kind == MixKind::Mixup) {
#pragma omp parallel for schedule(static) if (static_cast <std::int64_t>(pairs) * image_elements >= \
                                              parallel_threshold)
    for (int first = 0; first < pairs; ++first) {
      Element* own = images + first * image_elements;
      Element* partner = images + (batch - 1 - first) * image_elements;
      for (std::int64_t index = 0; index < image_elements; ++index) {
        const Element own_value = own[index], partner_value = partner[index];
        narrow_into(own[index],
                    blend(own_value, partner_value, geometry.own_weight, geometry.partner_weight));
        if (own != partner)
          narrow_into(partner[index],
                      blend(partner_value, own_value, geometry.own_weight, geometry.partner_weight));
      }
    }
    return;
  }
  const std::int64_t box_begin = static_cast<std::int64_t>(geometry.box_left) * geometry.channels;
  const std::int64_t box_end = static_cast<std::int64_t>(geometry.box_right) * geometry.channels;
  for (int first = 0; first < batch / 2; ++first) {
    Element* own = images + first * image_elements;
    Element* partner = images + (batch - 1 - first) * image_elements;
    for (int y = geometry.box_top; y < geometry.box_bottom; ++y)
      for (std::int64_t index = y * row_elements + box_begin; index < y * row_elements + box_end; ++index) {
        const Element kept = own[index];
        own[index] = partner[index];
        partner[index] = kept;
      }
  }
}

}  // namespace

void mix_batch(const MixGeometry& geometry, float* images, const std::int32_t* labels,
               std::int32_t* partner_labels) {
  mix_batch_of(geometry, images, labels, partner_labels);
}
void mix_batch(const MixGeometry& geometry, Bf16* images, const std::int32_t* labels,
               std::int32_t* partner_labels) {
  mix_batch_of(geometry, images, labels, partner_labels);
}

}  // namespace phalanx::backend::cpu
