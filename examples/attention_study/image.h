#pragma once
// An 8-bit RGB raster (row-major, 3 bytes a pixel, origin top left) and the few drawing
// primitives the charts need. Every primitive clips to the image, so callers may draw partly
// outside it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tapegrad::attention_study {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};
inline constexpr Rgb kGrey{128, 128, 128};
inline constexpr Rgb kLightGrey{225, 225, 225};

class Image {
 public:
  Image(int width, int height, Rgb background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  const std::uint8_t* data() const { return pixels_.data(); }

  Rgb at(int x, int y) const;
  void set(int x, int y, Rgb c);
  // The rectangle [x, x + w) x [y, y + h).
  void fill_rect(int x, int y, int w, int h, Rgb c);
  // A rectangle's 1-pixel outline.
  void outline_rect(int x, int y, int w, int h, Rgb c);
  // A straight segment `thickness` pixels wide (Bresenham with a square pen).
  void line(int x0, int y0, int x1, int y1, Rgb c, int thickness = 1);

 private:
  int width_, height_;
  std::vector<std::uint8_t> pixels_;
};

}  // namespace tapegrad::attention_study
