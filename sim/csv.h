// CSV fields as RFC 4180 writes them, so that a name or a reason holding a comma, a quote or a
// line break stays one field for every reader (pandas, spreadsheets, csv modules).
#pragma once

#include <string>
#include <string_view>

namespace fleetsim {

// `text` as it is when it needs no quoting (and `always` is false), else in double quotes with
// its quotes doubled.
inline std::string csv_field(std::string_view text, bool always = false) {
  if (!always && text.find_first_of(",\"\r\n") == std::string_view::npos) {
    return std::string(text);
  }
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace fleetsim
