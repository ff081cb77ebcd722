// Image decoding and resizing for the image-folder importer: a JPEG made here decodes to close to
// its pixels, a truncated JPEG or a PNG with a broken body is an input error naming the file, and
// the resize keeps flat images flat and averages when it shrinks.
#include <turbojpeg.h>

#include <fstream>
#include <string>
#include <vector>

#include "data/data_test_support.hpp"
#include "phalanx/data/image_folder.hpp"
#include "support/test_support.hpp"

namespace phalanx::data {
namespace {

using testing::ScratchDirectory;

// A JPEG of `pixels` (RGB, or CMYK: TurboJPEG then writes YCCK with Adobe's marker, as Photoshop
// does), 4:4:4.
std::string encode_jpeg(const std::vector<std::uint8_t>& pixels, int width, int height,
                        TJPF format = TJPF_RGB, int quality = 95) {
  tjhandle handle = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(handle, pixels.data(), width, 0, height, format, &buffer, &size, TJSAMP_444, quality,
                        TJFLAG_ACCURATEDCT),
            0);
  std::string bytes(reinterpret_cast<const char*>(buffer), size);
  tjFree(buffer);
  tjDestroy(handle);
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ImageDecode, JpegDecodesCloseToItsPixelsAndTruncatedIsAnInputError) {
  ScratchDirectory scratch("image_decode");
  const int width = 24, height = 16;
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width * height * 3));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int channel = 0; channel < 3; ++channel)
        rgb[static_cast<std::size_t>((y * width + x) * 3 + channel)] =
            static_cast<std::uint8_t>(8 * x + 4 * y + 30 * channel);
  const std::string jpeg = encode_jpeg(rgb, width, height);
  const std::string good = scratch.file("good.jpg"), cut = scratch.file("cut.jpg");
  write_file(good, jpeg);
  // Cut inside the entropy-coded data, after the headers: decoding must fail, not pad with grey.
  write_file(cut, jpeg.substr(0, jpeg.size() - 40));

  const DecodedImage decoded = decode_image(good, 3);
  ASSERT_EQ(decoded.width, width);
  ASSERT_EQ(decoded.height, height);
  int worst = 0;
  for (std::size_t index = 0; index < rgb.size(); ++index)
    worst = std::max(worst, std::abs(int(decoded.pixels[index]) - int(rgb[index])));
  EXPECT_LE(worst, 12) << "quality-95 JPEG of a smooth ramp";
  const DecodedImage grey = decode_image(good, 1);
  EXPECT_EQ(grey.channels, 1);
  EXPECT_EQ(grey.pixels.size(), static_cast<std::size_t>(width * height));

  EXPECT_INPUT_ERROR(decode_image(cut, 3), cut + ": corrupt JPEG");
}

// A CMYK JPEG as Photoshop writes it: TurboJPEG stores 4-component input as YCCK and writes the
// Adobe segment that says the inks are inverted (stored 255 is no ink). Two flat 8x8 blocks:
// stored (255, 0, 255, 255) is magenta ink alone, RGB (255, 0, 255); stored (128, 128, 128, 200)
// is 127 of each ink over 55 of black: 200 - 127 * 200 / 255 = 100 in each channel.
TEST(ImageDecode, AdobeCmykJpegDecodesToRgbAndGrey) {
  ScratchDirectory scratch("image_decode_cmyk");
  const int width = 16, height = 8;
  std::vector<std::uint8_t> cmyk(static_cast<std::size_t>(width * height * 4));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::uint8_t left[4] = {255, 0, 255, 255}, right[4] = {128, 128, 128, 200};
      for (int component = 0; component < 4; ++component)
        cmyk[static_cast<std::size_t>((y * width + x) * 4 + component)] =
            x < 8 ? left[component] : right[component];
    }
  const std::string path = scratch.file("print.jpg");
  write_file(path, encode_jpeg(cmyk, width, height, TJPF_CMYK, 98));

  const DecodedImage rgb = decode_image(path, 3);
  ASSERT_EQ(rgb.width, width);
  ASSERT_EQ(rgb.height, height);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const int expected[3] = {x < 8 ? 255 : 100, x < 8 ? 0 : 100, x < 8 ? 255 : 100};
      for (int channel = 0; channel < 3; ++channel)
        EXPECT_NEAR(rgb.pixels[static_cast<std::size_t>((y * width + x) * 3 + channel)], expected[channel], 3)
            << "pixel " << x << "," << y << " channel " << channel;
    }
  // Grey is ITU-R 601 luma of that RGB: magenta 0.299 * 255 + 0.114 * 255 = 105, grey 100.
  const DecodedImage grey = decode_image(path, 1);
  ASSERT_EQ(grey.pixels.size(), static_cast<std::size_t>(width * height));
  EXPECT_NEAR(grey.pixels[0], 105, 3);
  EXPECT_NEAR(grey.pixels[static_cast<std::size_t>(width - 1)], 100, 3);

  // Without the Adobe segment the same bytes are plain CMYK to libjpeg, and the inks are read as
  // stored, not inverted: each channel is (255 - ink) * (255 - black) / 255 of the stored values.
  std::string bytes = phalanx::testing::file_bytes(path);
  const std::size_t segment = bytes.find("\xFF\xEE");
  ASSERT_NE(segment, std::string::npos) << "TurboJPEG wrote no Adobe segment";
  const std::size_t length =
      static_cast<unsigned char>(bytes[segment + 2]) << 8 | static_cast<unsigned char>(bytes[segment + 3]);
  bytes.erase(segment, 2 + length);
  const std::string unmarked = scratch.file("unmarked.jpg");
  write_file(unmarked, bytes);
  tjhandle decoder = tjInitDecompress();
  std::vector<std::uint8_t> stored(cmyk.size());
  ASSERT_EQ(tjDecompress2(decoder, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                          stored.data(), width, 0, height, TJPF_CMYK, TJFLAG_ACCURATEDCT),
            0);
  tjDestroy(decoder);
  const DecodedImage plain = decode_image(unmarked, 3);
  for (std::size_t pixel = 0; pixel < static_cast<std::size_t>(width * height); ++pixel) {
    const double left = 255.0 - stored[pixel * 4 + 3];
    for (std::size_t channel = 0; channel < 3; ++channel)
      EXPECT_NEAR(plain.pixels[pixel * 3 + channel], left - stored[pixel * 4 + channel] * left / 255.0, 1.0)
          << "pixel " << pixel << " channel " << channel;
  }
}

TEST(ImageDecode, UnknownAndBrokenFilesNameTheFile) {
  ScratchDirectory scratch("image_decode_bad");
  const std::string text = scratch.file("notes.png"), empty = scratch.file("empty.png"),
                    broken = scratch.file("broken.png");
  write_file(text, "hello, not an image");
  write_file(empty, "");
  write_file(broken, std::string("\x89PNG\r\n\x1a\n", 8) + std::string(40, '\0'));
  EXPECT_INPUT_ERROR(decode_image(text, 3), text + ": neither a PNG nor a JPEG");
  EXPECT_INPUT_ERROR(decode_image(empty, 3), empty + ": empty file");
  EXPECT_INPUT_ERROR(decode_image(broken, 3), broken + ": not a readable PNG");
}

// One thread's ImageScratch serves image after image: a large JPEG, then a smaller one, then a
// CMYK one, a corrupt file and a grey decode after it each come out exactly as with fresh buffers,
// so nothing of an earlier image (a longer buffer, a failed decode) shows in a later one.
TEST(ImageDecode, ReusedBuffersGiveWhatFreshOnesDo) {
  ScratchDirectory scratch("image_decode_reuse");
  const auto ramp = [](int width, int height, int seed) {
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width * height * 3));
    for (std::size_t index = 0; index < rgb.size(); ++index)
      rgb[index] = static_cast<std::uint8_t>((index * 7 + static_cast<std::size_t>(seed) * 31) % 251);
    return rgb;
  };
  const std::string large = scratch.file("large.jpg"), small = scratch.file("small.jpg"),
                    print = scratch.file("print.jpg"), broken = scratch.file("broken.jpg");
  write_file(large, encode_jpeg(ramp(64, 48, 1), 64, 48));
  write_file(small, encode_jpeg(ramp(20, 12, 2), 20, 12));
  std::vector<std::uint8_t> cmyk(static_cast<std::size_t>(24 * 16 * 4));
  for (std::size_t index = 0; index < cmyk.size(); ++index)
    cmyk[index] = static_cast<std::uint8_t>(index * 13 % 256);
  write_file(print, encode_jpeg(cmyk, 24, 16, TJPF_CMYK, 90));
  const std::string jpeg = encode_jpeg(ramp(32, 32, 3), 32, 32);
  write_file(broken, jpeg.substr(0, jpeg.size() - 40));

  ImageScratch reused;
  DecodedImage decoded, resized;
  for (const auto& [path, channels] : {std::pair{large, 3}, std::pair{small, 3}, std::pair{print, 3},
                                       std::pair{broken, 3}, std::pair{large, 1}, std::pair{small, 3}}) {
    if (path == broken) {
      EXPECT_INPUT_ERROR(decode_image(path, channels, decoded, reused), path + ": corrupt JPEG");
      continue;
    }
    decode_image(path, channels, decoded, reused);
    const DecodedImage fresh = decode_image(path, channels);
    EXPECT_EQ(decoded.height, fresh.height) << path;
    EXPECT_EQ(decoded.width, fresh.width) << path;
    EXPECT_EQ(decoded.channels, fresh.channels) << path;
    EXPECT_EQ(decoded.pixels, fresh.pixels) << path;
    for (const auto& [height, width] : {std::pair{10, 14}, std::pair{5, 3}, std::pair{50, 70}}) {
      resize_image(decoded, height, width, resized, reused);
      const DecodedImage expected = resize_image(fresh, height, width);
      EXPECT_EQ(resized.height, height);
      EXPECT_EQ(resized.width, width);
      EXPECT_EQ(resized.pixels, expected.pixels) << path << " to " << height << "x" << width;
    }
  }
}

TEST(ImageResize, FlatStaysFlatAndShrinkingAverages) {
  DecodedImage flat{40, 30, 3, std::vector<std::uint8_t>(40 * 30 * 3, 77)};
  for (const auto& [height, width] : {std::pair{8, 8}, std::pair{80, 45}, std::pair{40, 30}}) {
    const DecodedImage resized = resize_image(flat, height, width);
    ASSERT_EQ(resized.pixels.size(), static_cast<std::size_t>(height * width * 3));
    for (const auto value : resized.pixels) ASSERT_EQ(value, 77);
  }
  // A 1-pixel checkerboard shrunk 4x is grey (averaged), not one of the two colours (aliased).
  DecodedImage board{16, 16, 1, {}};
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) board.pixels.push_back((x + y) % 2 ? 200 : 0);
  const DecodedImage small = resize_image(board, 4, 4);
  for (const auto value : small.pixels) {
    EXPECT_GE(value, 90);
    EXPECT_LE(value, 110);
  }
}

}  // namespace
}  // namespace phalanx::data
