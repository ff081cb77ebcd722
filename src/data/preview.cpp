// `phalanx data preview`: draws a grid of samples, each upscaled so 28x28 images are visible, with
// its class name underneath in a built-in 5x7 bitmap font (no font library to install), and writes
// it as a PNG through libpng's simplified API, which needs no setjmp/longjmp across C++ frames.
#include "phalanx/data/preview.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "phalanx/core/atomic_file.hpp"
#include "phalanx/core/error.hpp"
#include "phalanx/core/random.hpp"
#include "phalanx/data/dataset.hpp"

namespace phalanx::data {
namespace {

constexpr int glyph_width = 5, glyph_height = 7;
constexpr int glyph_advance = glyph_width + 1;  // one blank column between characters
constexpr int smallest_image_pixels = 56;       // upscale until the longer side is at least this
constexpr int cell_padding = 4;                 // around each image, in pixels
constexpr int label_gap = 3;                    // between an image and its label
constexpr std::size_t longest_label = 20;       // characters; longer class names are cut
constexpr std::uint8_t background = 255, ink = 0;

struct Glyph {
  char character;
  std::array<std::string_view, glyph_height> rows;  // '#' is ink, '.' is background
};

// The characters class names need (letters, digits, space, '/', '-', '_'); anything else is drawn
// as unknown_glyph, a box, so a missing character is visible rather than silently dropped.
constexpr Glyph font[] = {
    {'A', {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'B', {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
    {'C', {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
    {'D', {"####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."}},
    {'E', {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
    {'F', {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
    {'G', {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
    {'H', {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'I', {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'J', {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
    {'K', {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
    {'L', {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
    {'M', {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
    {'N', {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
    {'O', {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'P', {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
    {'Q', {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
    {'R', {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
    {'S', {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
    {'T', {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
    {'U', {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'V', {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'W', {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
    {'X', {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
    {'Y', {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
    {'Z', {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
    {'a', {".....", ".....", ".###.", "....#", ".####", "#...#", ".####"}},
    {'b', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####."}},
    {'c', {".....", ".....", ".###.", "#....", "#....", "#...#", ".###."}},
    {'d', {"....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"}},
    {'e', {".....", ".....", ".###.", "#...#", "#####", "#....", ".###."}},
    {'f', {"..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."}},
    {'g', {".....", ".####", "#...#", "#...#", ".####", "....#", ".###."}},
    {'h', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'i', {"..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."}},
    {'j', {"...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.."}},
    {'k', {"#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."}},
    {'l', {".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'m', {".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"}},
    {'n', {".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'o', {".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."}},
    {'p', {".....", ".....", "####.", "#...#", "####.", "#....", "#...."}},
    {'q', {".....", ".....", ".##.#", "#..##", ".####", "....#", "....#"}},
    {'r', {".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."}},
    {'s', {".....", ".....", ".###.", "#....", ".###.", "....#", "####."}},
    {'t', {".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."}},
    {'u', {".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"}},
    {'v', {".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'w', {".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."}},
    {'x', {".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"}},
    {'y', {".....", ".....", "#...#", "#...#", ".####", "....#", ".###."}},
    {'z', {".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"}},
    {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
    {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
    {'3', {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
    {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
    {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
    {'6', {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
    {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
    {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
    {'9', {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
    {' ', {".....", ".....", ".....", ".....", ".....", ".....", "....."}},
    {'/', {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."}},
    {'-', {".....", ".....", ".....", ".###.", ".....", ".....", "....."}},
    {'_', {".....", ".....", ".....", ".....", ".....", ".....", "#####"}},
};
constexpr Glyph unknown_glyph = {'?', {"#####", "#...#", "#...#", "#...#", "#...#", "#...#", "#####"}};

const Glyph& glyph_for(char character) {
  for (const Glyph& glyph : font)
    if (glyph.character == character) return glyph;
  return unknown_glyph;
}

std::string shown_label(const std::string& name) {
  return name.size() <= longest_label ? name : name.substr(0, longest_label);
}

int text_width(const std::string& text) {
  return text.empty() ? 0 : static_cast<int>(text.size()) * glyph_advance - 1;
}

// An 8-bit canvas, `channels` bytes per pixel, row by row.
struct Canvas {
  int width, height, channels;
  std::vector<std::uint8_t> pixels;

  std::uint8_t* at(int x, int y) {
    return pixels.data() + (static_cast<std::size_t>(y) * width + x) * static_cast<std::size_t>(channels);
  }
  void fill_pixel(int x, int y, std::uint8_t value) { std::fill_n(at(x, y), channels, value); }
};

void draw_text(Canvas& canvas, const std::string& text, int left, int top) {
  for (std::size_t position = 0; position < text.size(); ++position) {
    const Glyph& glyph = glyph_for(text[position]);
    const int glyph_left = left + static_cast<int>(position) * glyph_advance;
    for (int row = 0; row < glyph_height; ++row)
      for (int column = 0; column < glyph_width; ++column)
        if (glyph.rows[row][column] == '#') canvas.fill_pixel(glyph_left + column, top + row, ink);
  }
}

// `count` distinct sample indices below `population`, in ascending order (Floyd's algorithm: O(count)
// time and memory however large the split, unlike shuffling all indices).
std::vector<std::int64_t> choose_samples(std::int64_t population, std::int64_t count, std::uint64_t seed) {
  RandomStream random(seed, fnv1a_hash("phalanx data preview"));
  std::unordered_set<std::int64_t> chosen;
  for (std::int64_t candidate = population - count; candidate < population; ++candidate) {
    const auto pick = static_cast<std::int64_t>(random.next_below(static_cast<std::uint64_t>(candidate + 1)));
    chosen.insert(chosen.count(pick) ? candidate : pick);
  }
  std::vector<std::int64_t> samples(chosen.begin(), chosen.end());
  std::sort(samples.begin(), samples.end());
  return samples;
}

// Frees libpng's state of a simplified-API image however encoding ends (the write call frees it
// on return too; a second png_image_free is a no-op).
class PngImage {
 public:
  PngImage() {
    image_ = png_image{};
    image_.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image_); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
  png_image* get() { return &image_; }

 private:
  png_image image_;
};

std::string encode_png(const Canvas& canvas, const std::string& output_path) {
  PngImage image;
  image.get()->width = static_cast<png_uint_32>(canvas.width);
  image.get()->height = static_cast<png_uint_32>(canvas.height);
  image.get()->format = canvas.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  const auto row_stride = static_cast<png_int_32>(canvas.width * canvas.channels);
  // First call measures, second writes: the size of a compressed PNG is not known in advance.
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(image.get(), nullptr, &size, 0, canvas.pixels.data(), row_stride, nullptr))
    throw_internal_error(output_path + ": encoding the PNG failed: " + image.get()->message, __FILE__,
                         __LINE__);
  std::string encoded(size, '\0');
  if (!png_image_write_to_memory(image.get(), encoded.data(), &size, 0, canvas.pixels.data(), row_stride,
                                 nullptr))
    throw_internal_error(output_path + ": encoding the PNG failed: " + image.get()->message, __FILE__,
                         __LINE__);
  encoded.resize(size);
  return encoded;
}

}  // namespace

std::vector<std::uint8_t> render_preview(const std::string& dataset_path, const PreviewOptions& options,
                                         PreviewLayout& layout) {
  PHALANX_REQUIRE_INPUT(options.count >= 1 && options.count <= largest_preview_count, "preview count ",
                        options.count, " must be in [1, ", largest_preview_count, "]");
  const DatasetInfo info = read_dataset_info(dataset_path);
  const DatasetInfo::SplitInfo* split_info = info.find_split(options.split);
  if (!split_info) {
    std::string available;
    for (const auto& split : info.splits) available += (available.empty() ? "" : ", ") + split.name;
    throw_input_error(dataset_path + ": no split \"" + options.split +
                      "\" to preview (the file has: " + available + ")");
  }
  const std::int64_t count = std::min<std::int64_t>(options.count, split_info->count);
  layout = PreviewLayout{};
  layout.samples = choose_samples(split_info->count, count, options.seed);
  const Split split = read_samples(dataset_path, options.split, layout.samples);

  // Three channels are shown in colour; any other count as grayscale of its first channel.
  layout.channels = split.channels == 3 ? 3 : 1;
  layout.scale = std::max(1, (smallest_image_pixels + std::max(split.height, split.width) - 1) /
                                 std::max(split.height, split.width));
  const int image_width = split.width * layout.scale, image_height = split.height * layout.scale;
  int label_width = 0;
  for (const auto& name : info.classes) label_width = std::max(label_width, text_width(shown_label(name)));
  layout.cell_width = std::max(image_width, label_width) + 2 * cell_padding;
  layout.cell_height = cell_padding + image_height + label_gap + glyph_height + cell_padding;
  layout.image_offset_x = (layout.cell_width - image_width) / 2;
  layout.image_offset_y = cell_padding;
  layout.columns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(count))));
  layout.rows = static_cast<int>((count + layout.columns - 1) / layout.columns);
  layout.width = layout.columns * layout.cell_width;
  layout.height = layout.rows * layout.cell_height;

  Canvas canvas{layout.width, layout.height, layout.channels, {}};
  canvas.pixels.assign(static_cast<std::size_t>(layout.width) * layout.height * layout.channels, background);
  const auto sample_bytes = static_cast<std::size_t>(split.image_bytes());
  for (std::size_t tile = 0; tile < layout.samples.size(); ++tile) {
    const std::uint8_t* source = split.images.data() + tile * sample_bytes;
    const int left = layout.image_x(tile), top = layout.image_y(tile);
    for (int y = 0; y < image_height; ++y)
      for (int x = 0; x < image_width; ++x) {
        const std::uint8_t* pixel =
            source + (static_cast<std::size_t>(y / layout.scale) * split.width + x / layout.scale) *
                         static_cast<std::size_t>(split.channels);
        std::copy_n(pixel, layout.channels, canvas.at(left + x, top + y));
      }
    const std::string label = shown_label(info.classes[static_cast<std::size_t>(split.labels[tile])]);
    const int cell_left =
        static_cast<int>(tile % static_cast<std::size_t>(layout.columns)) * layout.cell_width;
    draw_text(canvas, label, cell_left + (layout.cell_width - text_width(label)) / 2,
              top + image_height + label_gap);
  }
  return std::move(canvas.pixels);
}

PreviewLayout write_preview(const std::string& dataset_path, const std::string& output_path,
                            const PreviewOptions& options) {
  PreviewLayout layout;
  std::vector<std::uint8_t> pixels = render_preview(dataset_path, options, layout);
  const Canvas canvas{layout.width, layout.height, layout.channels, std::move(pixels)};
  write_file_atomically(output_path, encode_png(canvas, output_path));
  return layout;
}

}  // namespace phalanx::data
