#pragma once
// The study page: page.html (layout and style) with page.js (the drawing) and the data inlined,
// one self-contained file: no network, no external script, font or image. CMake embeds the two
// files into the program (page_assets.cpp.in), so they are edited as HTML and JavaScript.
#include <string>

namespace tapegrad::attention_study {

// data_json: the page's data (report_data.h). It goes inside a <script type="application/json">
// block, so it must not contain "</" (report_data escapes '<' in every string).
std::string render_page(const std::string& data_json);

namespace detail {
extern const char* const kPageTemplate;  // page.html, with {{DATA}} and {{SCRIPT}}
extern const char* const kPageScript;    // page.js
}  // namespace detail

}  // namespace tapegrad::attention_study
