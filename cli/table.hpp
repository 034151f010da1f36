// A plain text table with right-aligned columns (a last "note" column may be left-aligned),
// human-readable byte counts, rows as CSV, and a progress bar.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header, bool left_align_last = false)
      : header_(std::move(header)), left_align_last_(left_align_last) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  bool left_align_last_;
};

std::string human_bytes(std::int64_t bytes);  // "1.50 GiB"

// Rows of JSON objects as CSV with these columns (null: empty; strings quoted where needed).
std::string rows_to_csv(const std::vector<std::string>& columns, const std::vector<nlohmann::ordered_json>& rows);

// "label [#####.....] done/total configurations" on standard error, on a terminal outside CI.
class ProgressBar {
 public:
  // Shown only on a terminal, outside CI, and unless `quiet` (-q).
  ProgressBar(std::string label, std::size_t total, bool quiet);
  void update(std::size_t done);

 private:
  std::string label_;
  std::size_t total_;
  bool shown_;
};

}  // namespace pipetwin::cli
