// CSV files of numbers, for the `load_csv` builtin (docs/language.md §6).
#ifndef RUNNEL_IO_CSV_READER_H_
#define RUNNEL_IO_CSV_READER_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/tensor.h"

namespace runnel {

// A CSV file of numbers: one f32 vector per column, named by the header
// line (or c0, c1, ... without one). Blank lines are skipped; fields are
// trimmed of spaces, tabs and double quotes. Errors name the file and line.
absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadCsv(
    const std::string& path, bool header);

}  // namespace runnel

#endif  // RUNNEL_IO_CSV_READER_H_
