#include "examples/attention_study/html.h"

namespace tapegrad::attention_study {

namespace {

constexpr std::string_view kStyle = R"(
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 110em; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
h3 { margin: 1.2em 0 0.4em; font-size: 1.05em; }
nav li { margin: 0.15em 0; }
.figures { display: flex; flex-wrap: wrap; gap: 0.8em; align-items: flex-start; }
figure { margin: 0; padding: 0.5em; border: 1px solid #ddd; background: #fff; }
figure img { display: block; }
figcaption { font-size: 0.85em; color: #444; margin-top: 0.4em; max-width: 30em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f2f2f2; }
td:first-child, th:first-child, table.facts td { text-align: left; }
code { background: #f4f4f4; padding: 0 0.2em; }
)";

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                       const std::string& css_class) {
  std::string out = css_class.empty() ? "<table>\n" : "<table class=\"" + css_class + "\">\n";
  if (!header.empty()) {
    out += "<tr>";
    for (const auto& h : header) out += "<th>" + html_escape(h) + "</th>";
    out += "</tr>\n";
  }
  for (const auto& row : rows) {
    out += "<tr>";
    for (const auto& cell : row) out += "<td>" + html_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

std::string render_page(const Page& page) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                    html_escape(page.title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";
  out += "<h1>" + html_escape(page.title) + "</h1>\n" + page.intro_html + "\n<nav><ul>\n";
  for (const auto& s : page.sections) out += "<li><a href=\"#" + s.id + "\">" + html_escape(s.heading) + "</a></li>\n";
  out += "</ul></nav>\n";
  for (const auto& s : page.sections) {
    out += "<section id=\"" + s.id + "\">\n<h2>" + html_escape(s.heading) + "</h2>\n" + s.body_html + "\n";
    for (const auto& g : s.groups) {
      if (!g.heading_html.empty()) out += "<h3>" + g.heading_html + "</h3>\n";
      out += "<div class=\"figures\">\n";
      for (const auto& f : g.figures) {
        out += "<figure><img src=\"" + html_escape(f.src) + "\" alt=\"" + html_escape(f.alt) + "\"><figcaption>" +
               f.caption_html + "</figcaption></figure>\n";
      }
      out += "</div>\n";
    }
    out += s.footer_html + "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace tapegrad::attention_study
