#include "examples/attention_study/page.h"

#include <stdexcept>

namespace tapegrad::attention_study {

namespace {

void replace_once(std::string& text, const std::string& placeholder, const std::string& with) {
  const auto at = text.find(placeholder);
  if (at == std::string::npos) throw std::logic_error("page.html has no " + placeholder);
  text.replace(at, placeholder.size(), with);
}

}  // namespace

std::string render_page(const std::string& data_json) {
  if (data_json.find("</") != std::string::npos)
    throw std::logic_error("render_page: the data contain \"</\", which would end its <script> block");
  std::string page = detail::kPageTemplate;
  // The script first: the data may contain the text "{{SCRIPT}}", the script does not.
  replace_once(page, "{{SCRIPT}}", detail::kPageScript);
  replace_once(page, "{{DATA}}", data_json);
  return page;
}

}  // namespace tapegrad::attention_study
