// Fuzz target: the image decoder of the image-folder importer. Input: one byte choosing grey
// (even) or RGB (odd), then a PNG or JPEG file (the decoder goes by content); a decoded image is
// also resized, up and down, as the importer resizes it.
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "phalanx/data/image_folder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int channels = (data[0] & 1) != 0 ? 3 : 1;
  const std::string path = phalanx::fuzz::write_scratch_file(
      "image", std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  phalanx::fuzz::accept_input_errors([&] {
    const phalanx::data::DecodedImage image = phalanx::data::decode_image(path, channels);
    (void)phalanx::data::resize_image(image, 5, 7);
    (void)phalanx::data::resize_image(image, image.height * 2 + 1, image.width + 3);
  });
  return 0;
}
