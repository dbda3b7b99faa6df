// Host-side datasets for the data builtins (docs/language.md §6): row
// selection and order for `batches`. The file readers are in io/
// (npy.h, csv_reader.h, idx_reader.h).
#ifndef RUNNEL_INTERPRETER_DATA_H_
#define RUNNEL_INTERPRETER_DATA_H_

#include <cstdint>
#include <vector>

#include "framework/tensor.h"

namespace runnel::interp {

// Rows `rows` of `t` along axis 0 (a copy).
Tensor GatherRows(const Tensor& t, const std::vector<int64_t>& rows);
// 0..n-1, shuffled deterministically by `seed` when `shuffle`.
std::vector<int64_t> RowOrder(int64_t n, bool shuffle, uint64_t seed);

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_DATA_H_
