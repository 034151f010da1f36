// Text tables, CSV rows and the progress bar of the CLI.
#include "table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

namespace pipetwin::cli {

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) widths[c] = header_[c].size();
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    for (std::size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const bool last = c + 1 == widths.size();
      if (last && left_align_last_) {
        out << (c ? "  " : "") << cell;
      } else {
        out << (c ? "  " : "") << fmt::format("{:>{}}", cell, widths[c]);
      }
    }
    out << "\n";
  };
  line(header_);
  for (const auto& row : rows_) line(row);
}

std::string human_bytes(std::int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", value, units[unit]);
}

namespace {

std::string csv_escape(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string rows_to_csv(const std::vector<std::string>& columns, const std::vector<nlohmann::ordered_json>& rows) {
  std::ostringstream csv;
  for (std::size_t c = 0; c < columns.size(); ++c) csv << (c ? "," : "") << columns[c];
  csv << "\n";
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const auto& value = row.at(columns[c]);
      csv << (c ? "," : "") << (value.is_null() ? "" : value.is_string() ? csv_escape(value.get<std::string>()) : value.dump());
    }
    csv << "\n";
  }
  return csv.str();
}

ProgressBar::ProgressBar(std::string label, std::size_t total, bool quiet)
    : label_(std::move(label)),
      total_(total),
      shown_(!quiet && ::isatty(STDERR_FILENO) && std::getenv("CI") == nullptr) {}

void ProgressBar::update(std::size_t done) {
  if (!shown_) return;
  const std::size_t width = 30, filled = total_ ? done * width / total_ : width;
  std::cerr << "\r" << label_ << " [" << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done
            << "/" << total_ << " configurations" << std::flush;
  if (done == total_) std::cerr << "\r" << std::string(70, ' ') << "\r" << std::flush;
}

}  // namespace pipetwin::cli
