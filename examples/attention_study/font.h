#pragma once
// A 5x7 pixel font (plus two descender rows for g, j, p, q, y) for chart titles, axis labels and
// numbers, drawn at an integer scale. Characters: 0-9 a-z A-Z and . - _ : / = ( ) , + | space.
// Each glyph advances 6 pixels (5 + 1 of spacing) times the scale; a line is 9 rows (7 above the
// baseline, 2 of descender) times the scale.
#include <string_view>

#include "examples/attention_study/image.h"

namespace tapegrad::attention_study {

inline constexpr int kGlyphAdvance = 6;
inline constexpr int kGlyphHeight = 9;

// Width in pixels of text drawn at `scale` (no trailing spacing column).
int text_width(std::string_view text, int scale);
inline int text_height(int scale) { return kGlyphHeight * scale; }

// Draws text with its top-left corner at (x, y). Throws std::invalid_argument naming a character
// the font does not have.
void draw_text(Image& image, int x, int y, std::string_view text, Rgb color, int scale);

// Draws text rotated 90 degrees counter-clockwise (reading bottom to top), for vertical axis
// titles; (x, y) is the top-left corner of the rotated box, text_height wide and text_width tall.
void draw_text_vertical(Image& image, int x, int y, std::string_view text, Rgb color, int scale);

}  // namespace tapegrad::attention_study
