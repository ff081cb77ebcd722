// HtmlPage: one self-contained HTML document (inline CSS, inline SVG, no scripts, no network),
// built section by section. Every text given to it is escaped; only chart SVG from chart.hpp and
// raw() go in as markup.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phalanx::report {

// &, <, >, " and ' as entities.
std::string escape_html(std::string_view text);

// A number for a reader: four significant digits, exponent form only for very large or very
// small magnitudes; "-" for a value that is not finite (a missing measurement).
std::string format_number(double value);

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void heading(std::string_view text, int level = 2);
  void paragraph(std::string_view text);
  // A <pre> block (config text, logs).
  void preformatted(std::string_view text);
  // A table with a header row; cells are text. `id` becomes the table's id when not empty.
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
             std::string_view id = {});
  // Markup inserted as is (the SVG of chart.hpp), wrapped in a <figure> with an id when given.
  void figure(std::string_view svg, std::string_view id = {});
  void raw(std::string_view markup);

  std::string render() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace phalanx::report
