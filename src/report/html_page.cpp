// HtmlPage: the frame of every phalanx report. The style sheet is inline and small; the page
// has no scripts, so it renders the same in a browser, a mail client or a headless screenshot.
#include "phalanx/report/html_page.hpp"

#include <cmath>
#include <cstdio>

namespace phalanx::report {

std::string escape_html(std::string_view text) {
  std::string result;
  result.reserve(text.size());
  for (const char character : text) {
    switch (character) {
      case '&': result += "&amp;"; break;
      case '<': result += "&lt;"; break;
      case '>': result += "&gt;"; break;
      case '"': result += "&quot;"; break;
      case '\'': result += "&#39;"; break;
      default: result += character;
    }
  }
  return result;
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "-";
  char text[32];
  if (value != 0 && (std::fabs(value) >= 1e6 || std::fabs(value) < 1e-3))
    std::snprintf(text, sizeof(text), "%.3g", value);
  else
    std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::heading(std::string_view text, int level) {
  const char digit = static_cast<char>('0' + (level < 1 ? 1 : level > 4 ? 4 : level));
  body_.append("<h").append(1, digit).append(">");
  body_.append(escape_html(text));
  body_.append("</h").append(1, digit).append(">\n");
}

void HtmlPage::paragraph(std::string_view text) {
  body_ += "<p>" + escape_html(text) + "</p>\n";
}

void HtmlPage::preformatted(std::string_view text) {
  body_ += "<pre>" + escape_html(text) + "</pre>\n";
}

void HtmlPage::table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows, std::string_view id) {
  body_ += id.empty() ? "<table>" : "<table id=\"" + escape_html(id) + "\">";
  body_ += "<thead><tr>";
  for (const auto& cell : header) body_ += "<th>" + escape_html(cell) + "</th>";
  body_ += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += "<td>" + escape_html(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table>\n";
}

void HtmlPage::figure(std::string_view svg, std::string_view id) {
  body_ += id.empty() ? "<figure>" : "<figure id=\"" + escape_html(id) + "\">";
  body_ += svg;
  body_ += "</figure>\n";
}

void HtmlPage::raw(std::string_view markup) {
  body_ += markup;
}

std::string HtmlPage::render() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         escape_html(title_) +
         "</title>\n<style>\n"
         "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}\n"
         "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}\n"
         "figure{display:inline-block;margin:8px 12px 8px 0;vertical-align:top}\n"
         "table{border-collapse:collapse;font-size:13px;margin:8px 0}\n"
         "th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}\n"
         "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\n"
         "pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto;max-height:480px}\n"
         "</style>\n</head>\n<body>\n<h1>" +
         escape_html(title_) + "</h1>\n" + body_ + "</body>\n</html>\n";
}

}  // namespace phalanx::report
