#include "io/csv_reader.h"

#include <cstdlib>
#include <sstream>

#include "base/read_file.h"
#include "base/strings.h"

namespace runnel {
namespace {

absl::Status FileError(const std::string& path, std::string why) {
  return absl::InvalidArgumentError(StrCat(path, ": ", why));
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadCsv(
    const std::string& path, bool header) {
  absl::StatusOr<std::string> file = ReadFileToString(path);
  if (!file.ok()) return file.status();
  std::vector<std::string> names;
  std::vector<std::vector<float>> columns;
  std::stringstream ss(*file);
  std::string line;
  int line_no = 0;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    for (char c : l) {
      if (c == ',') {
        cells.push_back(cell);
        cell.clear();
      } else if (c != '\r') {
        cell += c;
      }
    }
    cells.push_back(cell);
    for (std::string& s : cells) {
      size_t a = s.find_first_not_of(" \t\"");
      size_t b = s.find_last_not_of(" \t\"");
      s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
    }
    return cells;
  };
  bool first = true;
  while (std::getline(ss, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> cells = split(line);
    if (first) {
      first = false;
      if (header) {
        names = cells;
        columns.resize(names.size());
        continue;
      }
      for (size_t i = 0; i < cells.size(); ++i) names.push_back(StrCat("c", i));
      columns.resize(names.size());
    }
    if (cells.size() != names.size()) {
      return FileError(path, StrCat("line ", line_no, " has ", cells.size(),
                                    " fields, expected ", names.size()));
    }
    for (size_t i = 0; i < cells.size(); ++i) {
      const char* s = cells[i].c_str();
      char* end = nullptr;
      float v = std::strtof(s, &end);
      if (cells[i].empty() || end == s || *end != '\0') {
        return FileError(path, StrCat("line ", line_no, ", column '", names[i],
                                      "': '", cells[i], "' is not a number"));
      }
      columns[i].push_back(v);
    }
  }
  if (names.empty()) return FileError(path, "the file is empty");
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < names.size(); ++i) {
    out.emplace_back(names[i], Tensor::FromVector<float>(columns[i]));
  }
  return out;
}

}  // namespace runnel
