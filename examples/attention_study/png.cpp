#include "examples/attention_study/png.h"

#include <stdexcept>
#include <string>
#include <string_view>

#include "nn/atomic_file.h"

// The one translation unit that compiles stb_image_write's implementation; only the in-memory
// encoder is used, so the file goes through write_file_atomic.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace tapegrad::attention_study {

using nn::write_file_atomic;

namespace {
void append_bytes(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
}
}  // namespace

void write_png(const std::filesystem::path& path, const Image& image) {
  std::string bytes;
  if (stbi_write_png_to_func(append_bytes, &bytes, image.width(), image.height(), 3, image.data(), image.width() * 3) ==
      0) {
    throw std::runtime_error("write_png('" + path.string() + "'): stb_image_write failed for a " +
                             std::to_string(image.width()) + "x" + std::to_string(image.height()) + " image");
  }
  write_file_atomic(path, bytes);
}

}  // namespace tapegrad::attention_study
