// A plain text table with right-aligned columns (a last "note" column may be left-aligned), and
// human-readable byte counts.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

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

}  // namespace pipetwin::cli
