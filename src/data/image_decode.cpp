// Decoding PNG (libpng's simplified API) and JPEG (TurboJPEG, the libjpeg-turbo API, which reports
// errors by return value instead of libjpeg's longjmp). The format is recognised from the file's
// first bytes, so a mislabelled file still decodes and a corrupt one fails with its name. CMYK and
// YCCK JPEGs (print scans; ImageNet's training set holds a few dozen) are converted to RGB with
// Pillow's formula, so an import gets the pixels a PyTorch pipeline would.
#include <png.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "phalanx/core/error.hpp"
#include "phalanx/data/image_folder.hpp"

namespace phalanx::data {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw_input_error(path + ": " + what);
}

// An image file larger than this is refused before it is read (the largest decodable image,
// largest_pixels below, compresses to far less).
constexpr std::streamoff largest_file_bytes = std::streamoff{1} << 31;

// Into `bytes`, whose capacity a caller decoding many files keeps from one to the next: sized
// from the file, then read in one call (assigning from a stream iterator would build a string
// per file and copy it).
void read_bytes(const std::string& path, std::string& bytes) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) fail(path, "cannot be opened");
  const std::streamoff size = file.tellg();
  if (size < 0) fail(path, "cannot be read (its size is unknown)");
  if (size > largest_file_bytes) fail(path, "is " + std::to_string(size) + " bytes, too large for an image");
  bytes.resize(static_cast<std::size_t>(size));
  file.seekg(0);
  file.read(bytes.data(), size);
  if (file.gcount() != size) fail(path, "cannot be read");
}

bool is_png(const std::string& bytes) {
  return bytes.size() >= 8 && png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8) == 0;
}

bool is_jpeg(const std::string& bytes) {
  return bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0xFF &&
         static_cast<unsigned char>(bytes[1]) == 0xD8 && static_cast<unsigned char>(bytes[2]) == 0xFF;
}

// A decoded image larger than this is refused rather than allocated (a corrupt header can claim
// anything).
constexpr std::int64_t largest_pixels = std::int64_t{1} << 28;

void decode_png(const std::string& path, const std::string& bytes, int channels, DecodedImage& decoded) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(path, std::string("not a readable PNG: ") + image.message);
  decoded.height = static_cast<int>(image.height);
  decoded.width = static_cast<int>(image.width);
  decoded.channels = channels;
  if (static_cast<std::int64_t>(image.height) * image.width > largest_pixels) {
    png_image_free(&image);
    fail(path,
         "PNG of " + std::to_string(image.width) + "x" + std::to_string(image.height) + " is too large");
  }
  // Transparent images are composited on black, like Pillow's convert("RGB") drops alpha.
  image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  decoded.pixels.resize(static_cast<std::size_t>(decoded.height) * decoded.width * channels);
  if (!png_image_finish_read(&image, nullptr, decoded.pixels.data(), 0, nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    fail(path, "corrupt PNG: " + message);
  }
}

class TurboJpeg {
 public:
  TurboJpeg() : handle_(tjInitDecompress()) {}
  ~TurboJpeg() {
    if (handle_) tjDestroy(handle_);
  }
  TurboJpeg(const TurboJpeg&) = delete;
  TurboJpeg& operator=(const TurboJpeg&) = delete;
  tjhandle get() const { return handle_; }

 private:
  tjhandle handle_;
};

// Whether the JPEG carries an Adobe APP14 segment before its scan. Photoshop, which writes nearly
// every CMYK JPEG there is, stores the inks inverted (0 is full ink) and marks that with this
// segment; libjpeg hands the stored values through as they are. Pillow inverts every CMYK JPEG,
// marked or not; an unmarked one (rare) is read here as stored, as decoders that check the
// marker (Little CMS's jpgicc, Firefox's) read it.
bool has_adobe_marker(const std::string& bytes) {
  std::size_t position = 2;  // past SOI
  while (position + 4 <= bytes.size()) {
    if (static_cast<unsigned char>(bytes[position]) != 0xFF) return false;
    const auto marker = static_cast<unsigned char>(bytes[position + 1]);
    if (marker == 0xFF) {  // fill byte before a marker
      ++position;
      continue;
    }
    if (marker == 0xDA || marker == 0xD9) return false;  // start of scan, end of image
    const std::size_t length = static_cast<std::size_t>(static_cast<unsigned char>(bytes[position + 2]))
                                   << 8 |
                               static_cast<unsigned char>(bytes[position + 3]);
    if (length < 2) return false;
    // libjpeg counts an APP14 segment as Adobe's only with its 12 data bytes (length 14).
    if (marker == 0xEE && length >= 14 && position + 9 <= bytes.size() &&
        bytes.compare(position + 4, 5, "Adobe") == 0)
      return true;
    position += 2 + length;
  }
  return false;
}

// Pillow's rounding of a * b / 255 (MULDIV255), so the conversion matches it value for value.
std::uint8_t multiply_255(int a, int b) {
  const int product = a * b + 128;
  return static_cast<std::uint8_t>(((product >> 8) + product) >> 8);
}

// CMYK inks (0 = none) to RGB as Pillow's cmyk2rgb: each channel is what the black leaves, less
// the colour ink's share of it. Grey is then ITU-R 601 luma, as Pillow's RGB-to-L.
void cmyk_to_pixels(const std::vector<std::uint8_t>& cmyk, bool inverted, int channels,
                    std::vector<std::uint8_t>& pixels) {
  const std::size_t count = cmyk.size() / 4;
  for (std::size_t pixel = 0; pixel < count; ++pixel) {
    int ink[4];
    for (int component = 0; component < 4; ++component) {
      const int stored = cmyk[pixel * 4 + static_cast<std::size_t>(component)];
      ink[component] = inverted ? 255 - stored : stored;
    }
    const int left = 255 - ink[3];
    int rgb[3];
    for (int channel = 0; channel < 3; ++channel) rgb[channel] = left - multiply_255(ink[channel], left);
    if (channels == 3) {
      for (int channel = 0; channel < 3; ++channel)
        pixels[pixel * 3 + static_cast<std::size_t>(channel)] = static_cast<std::uint8_t>(rgb[channel]);
    } else {
      pixels[pixel] =
          static_cast<std::uint8_t>((rgb[0] * 19595 + rgb[1] * 38470 + rgb[2] * 7471 + 0x8000) >> 16);
    }
  }
}

void decode_jpeg(const std::string& path, const std::string& bytes, int channels, DecodedImage& decoded,
                 std::vector<std::uint8_t>& cmyk) {
  TurboJpeg jpeg;
  if (!jpeg.get()) throw_internal_error("TurboJPEG could not start", __FILE__, __LINE__);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (tjDecompressHeader3(jpeg.get(), data, static_cast<unsigned long>(bytes.size()), &width, &height,
                          &subsampling, &colorspace) != 0)
    fail(path, std::string("not a readable JPEG: ") + tjGetErrorStr2(jpeg.get()));
  if (width <= 0 || height <= 0 || static_cast<std::int64_t>(width) * height > largest_pixels)
    fail(path, "JPEG of " + std::to_string(width) + "x" + std::to_string(height) + " is not a usable size");
  decoded.height = height;
  decoded.width = width;
  decoded.channels = channels;
  decoded.pixels.resize(static_cast<std::size_t>(height) * width * channels);
  // TJFLAG_STOPONWARNING: a truncated JPEG is an error here, not a grey bottom half.
  constexpr int flags = TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING;
  const auto size = static_cast<unsigned long>(bytes.size());
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    // libjpeg converts YCCK to CMYK but not CMYK to RGB, so that step is ours.
    cmyk.resize(static_cast<std::size_t>(height) * width * 4);
    if (tjDecompress2(jpeg.get(), data, size, cmyk.data(), width, 0, height, TJPF_CMYK, flags) != 0)
      fail(path, std::string("corrupt JPEG: ") + tjGetErrorStr2(jpeg.get()));
    cmyk_to_pixels(cmyk, has_adobe_marker(bytes), channels, decoded.pixels);
    return;
  }
  if (tjDecompress2(jpeg.get(), data, size, decoded.pixels.data(), width, 0, height,
                    channels == 3 ? TJPF_RGB : TJPF_GRAY, flags) != 0)
    fail(path, std::string("corrupt JPEG: ") + tjGetErrorStr2(jpeg.get()));
}

}  // namespace

void decode_image(const std::string& path, int channels, DecodedImage& into, ImageScratch& scratch) {
  PHALANX_CHECK(channels == 1 || channels == 3, "channels ", channels);
  read_bytes(path, scratch.file_bytes);
  const std::string& bytes = scratch.file_bytes;
  if (bytes.empty()) fail(path, "empty file, not an image");
  if (is_png(bytes)) return decode_png(path, bytes, channels, into);
  if (is_jpeg(bytes)) return decode_jpeg(path, bytes, channels, into, scratch.cmyk);
  fail(path, "neither a PNG nor a JPEG (unknown signature)");
}

DecodedImage decode_image(const std::string& path, int channels) {
  DecodedImage decoded;
  ImageScratch scratch;
  decode_image(path, channels, decoded, scratch);
  return decoded;
}

}  // namespace phalanx::data
