// tests/report/html_check: a small HTML checker for the report tests — every non-void element closed in order
// (raw-text elements <script>/<style> skipped as text), attributes quoted, and no external URL (http:, https:,
// protocol-relative "//host" in src/href, or @import / url() in CSS). Returns the problems found.
#pragma once
#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace strata_test {

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline std::vector<std::string> html_problems(const std::string& html) {
  static const std::set<std::string> void_tags{"area", "base", "br", "col", "embed", "hr", "img", "input",
                                               "link", "meta", "source", "track", "wbr"};
  std::vector<std::string> problems, open;
  const std::string low = lower(html);
  for (const char* bad : {"http:", "https:", "src=\"//", "href=\"//", "@import", "url("})
    if (low.find(bad) != std::string::npos) problems.push_back(std::string("external reference: ") + bad);
  if (low.rfind("<!doctype html>", 0) != 0) problems.push_back("no <!DOCTYPE html> first");
  std::size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 4, "<!--") == 0) {
      i = html.find("-->", i);
      if (i == std::string::npos) { problems.push_back("unclosed comment"); break; }
      continue;
    }
    if (html.compare(i, 2, "<!") == 0) { i = html.find('>', i); continue; }
    const bool closing = html.compare(i, 2, "</") == 0;
    std::size_t j = i + (closing ? 2 : 1);
    std::string name;
    while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) || html[j] == '-')) name += html[j++];
    name = lower(name);
    if (name.empty()) { problems.push_back("stray '<' at " + std::to_string(i)); ++i; continue; }
    // Find the tag's end, honouring quoted attribute values.
    char quote = 0;
    for (; j < html.size(); ++j) {
      if (quote) { if (html[j] == quote) quote = 0; }
      else if (html[j] == '"' || html[j] == '\'') quote = html[j];
      else if (html[j] == '>') break;
    }
    if (j >= html.size()) { problems.push_back("unterminated tag <" + name); break; }
    if (closing) {
      if (open.empty() || open.back() != name) problems.push_back("</" + name + "> does not close <" + (open.empty() ? "" : open.back()) + ">");
      else open.pop_back();
    } else if (!void_tags.count(name) && html[j - 1] != '/') {
      open.push_back(name);
      if (name == "script" || name == "style") {  // raw text up to the closing tag
        const std::size_t end = low.find("</" + name, j);
        if (end == std::string::npos) { problems.push_back("unclosed <" + name + ">"); break; }
        j = end - 1;
      }
    }
    i = j + 1;
  }
  for (const auto& o : open) problems.push_back("unclosed <" + o + ">");
  return problems;
}

}  // namespace strata_test
