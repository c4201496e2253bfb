#pragma once
// PNG encoding of an Image (through stb_image_write, Debian's libstb-dev), written atomically.
#include <filesystem>

#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

// Throws std::runtime_error when encoding or writing fails.
void write_png(const std::filesystem::path& path, const Image& image);

}  // namespace tapegrad::attention_study
