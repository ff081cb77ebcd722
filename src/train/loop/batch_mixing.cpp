// Mixup and CutMix draws (timm's Mixup, 'batch' mode) and their application through the backend.
// The draws follow timm's order: mixed or not, then mixup or CutMix (both alphas), then lam from
// Beta(alpha, alpha), then CutMix's box centre; the uniforms come from a Philox stream of the step.
#include "loop/batch_mixing.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace phalanx::train {

namespace {

// Keeps the mixing draws apart from every other stream derived from the seed.
constexpr std::uint64_t mixing_stream = 0x6d69'7875'70ULL;  // "mixup"

// Uniform in [0, 1) with 53 random bits, as numpy's doubles.
double uniform_double(RandomStream& random) {
  const std::uint64_t high = random.next_u32() >> 5, low = random.next_u32() >> 6;
  return (static_cast<double>(high) * 67108864.0 + static_cast<double>(low)) / 9007199254740992.0;
}

double standard_normal(RandomStream& random) {
  // Box-Muller; 1 - u is in (0, 1], so the logarithm is finite.
  const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform_double(random)));
  return radius * std::cos(2.0 * std::numbers::pi * uniform_double(random));
}

// Gamma(shape, 1), Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) * U^(1/shape).
double gamma_draw(double shape, RandomStream& random) {
  if (shape < 1.0) {
    const double boost = std::pow(1.0 - uniform_double(random), 1.0 / shape);
    return gamma_draw(shape + 1.0, random) * boost;
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    const double x = standard_normal(random);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = uniform_double(random);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

}  // namespace

double beta_symmetric(double alpha, RandomStream& random) {
  const double first = gamma_draw(alpha, random), second = gamma_draw(alpha, random);
  // Both underflow only for a tiny alpha, where Beta(alpha, alpha) is all but a fair coin on {0, 1}.
  if (first + second == 0.0) return uniform_double(random) < 0.5 ? 0.0 : 1.0;
  return first / (first + second);
}

MixDraw draw_mix(const config::MixupConfig& mixup, std::uint64_t seed, std::int64_t step, int height,
                 int width) {
  MixDraw draw;
  if (!mixup.enabled()) return draw;
  RandomStream random(mix_seed(seed, mixing_stream), static_cast<std::uint64_t>(step));
  if (!(uniform_double(random) < mixup.probability)) return draw;
  bool cutmix = false;
  double alpha = mixup.mixup_alpha;
  if (mixup.mixup_alpha > 0 && mixup.cutmix_alpha > 0) {
    cutmix = uniform_double(random) < mixup.switch_probability;
    if (cutmix) alpha = mixup.cutmix_alpha;
  } else if (mixup.cutmix_alpha > 0) {
    cutmix = true;
    alpha = mixup.cutmix_alpha;
  }
  const double lam = beta_symmetric(alpha, random);
  if (lam == 1.0) return draw;  // timm leaves the batch as it is
  if (!cutmix) {
    draw.mixed = true;
    draw.own_weight = lam;
    return draw;
  }
  const int centre_y = static_cast<int>(random.next_below(static_cast<std::uint64_t>(height)));
  const int centre_x = static_cast<int>(random.next_below(static_cast<std::uint64_t>(width)));
  return cutmix_box(lam, centre_y, centre_x, height, width);
}

MixDraw cutmix_box(double lam, int centre_y, int centre_x, int height, int width) {
  MixDraw draw;
  draw.mixed = true;
  draw.kind = backend::MixKind::CutMix;
  const double ratio = std::sqrt(1.0 - lam);
  const int cut_height = static_cast<int>(height * ratio), cut_width = static_cast<int>(width * ratio);
  draw.box_top = std::clamp(centre_y - cut_height / 2, 0, height);
  draw.box_bottom = std::clamp(centre_y + cut_height / 2, 0, height);
  draw.box_left = std::clamp(centre_x - cut_width / 2, 0, width);
  draw.box_right = std::clamp(centre_x + cut_width / 2, 0, width);
  const double box_area =
      static_cast<double>(draw.box_bottom - draw.box_top) * (draw.box_right - draw.box_left);
  draw.own_weight = 1.0 - box_area / (static_cast<double>(height) * width);
  return draw;
}

BatchMixing::BatchMixing(backend::Backend& backend, const config::MixupConfig& mixup, std::uint64_t seed,
                         int capacity)
    : backend_(backend), mixup_(mixup), seed_(seed) {
  if (mixup_.enabled()) partner_labels_ = Tensor(backend, Shape{capacity}, DType::Int32);
}

backend::MixGeometry mix_geometry(const MixDraw& draw, const Shape& shape) {
  return backend::MixGeometry{.batch = static_cast<int>(shape[0]),
                              .height = static_cast<int>(shape[1]),
                              .width = static_cast<int>(shape[2]),
                              .channels = static_cast<int>(shape[3]),
                              .kind = draw.kind,
                              .own_weight = static_cast<float>(draw.own_weight),
                              .partner_weight = static_cast<float>(1.0 - draw.own_weight),
                              .box_top = draw.box_top,
                              .box_bottom = draw.box_bottom,
                              .box_left = draw.box_left,
                              .box_right = draw.box_right};
}

backend::LabelMix BatchMixing::apply(Tensor& input, const std::int32_t* labels, std::int64_t step) {
  const Shape& shape = input.shape();
  const MixDraw draw = draw_mix(mixup_, seed_, step, static_cast<int>(shape[1]), static_cast<int>(shape[2]));
  if (!draw.mixed) return {};
  const backend::MixGeometry geometry = mix_geometry(draw, shape);
  std::int32_t* partner_labels = partner_labels_.data_as<std::int32_t>();
  backend_.mix_batch(geometry, input.data(), labels, partner_labels);
  return backend::LabelMix{partner_labels, static_cast<float>(draw.own_weight)};
}

}  // namespace phalanx::train
