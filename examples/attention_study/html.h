#pragma once
// A static HTML page of figures: a title, an introduction, a table of contents, then sections of
// captioned figures in groups. Every link is relative (the page moves with its directory), and
// the page needs no script or network access.
#include <string>
#include <string_view>
#include <vector>

namespace tapegrad::attention_study {

struct Figure {
  std::string src;           // relative path of the image
  std::string alt;           // plain text
  std::string caption_html;  // already escaped / HTML
};

struct FigureGroup {
  std::string heading_html;  // may be empty
  std::vector<Figure> figures;
};

struct Section {
  std::string id;  // anchor for the table of contents
  std::string heading;
  std::string body_html;  // before the figures
  std::vector<FigureGroup> groups;
  std::string footer_html;  // after the figures
};

struct Page {
  std::string title;
  std::string intro_html;
  std::vector<Section> sections;
};

std::string html_escape(std::string_view text);
// A table, with a header row unless header is empty; cells are escaped. css_class names a style
// of the page: "" (numbers right-aligned) or "facts" (label, value; all left-aligned).
std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::string& css_class = "");
std::string render_page(const Page& page);

}  // namespace tapegrad::attention_study
