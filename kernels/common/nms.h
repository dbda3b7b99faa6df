// non_max_suppression's checks and greedy selection, shared by the CPU's
// kernel (kernels/cpu/image_kernels.cc), which computes each overlap as it
// needs it, and the GPU's (kernels/cuda/image_kernels.cc), which computes
// them all on the device and reads them back as bits: one selection, so both
// devices keep the same boxes.
#ifndef RUNNEL_KERNELS_COMMON_NMS_H_
#define RUNNEL_KERNELS_COMMON_NMS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/strings.h"
#include "framework/kernel.h"
#include "framework/shape.h"

namespace runnel {

// boxes [batch, boxes, 4] and scores [batch, classes, boxes].
inline absl::Status CheckNms(const Shape& boxes, const Shape& scores) {
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 ||
      scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
    return absl::InvalidArgumentError(
        StrCat("boxes ", boxes.ToString(), " and scores ", scores.ToString(),
               " must be [batch, boxes, 4] and [batch, classes, boxes]"));
  }
  return absl::OkStatus();
}

// A run's checked inputs: boxes [batch, n, 4] and scores [batch, classes,
// n] (input 0 and 1), max_per_class, iou_threshold and score_threshold
// (2 to 4, in host memory).
struct NmsRun {
  int64_t batch = 0, classes = 0, n = 0, limit = 0;
  double iou = 0, floor = 0;
};
inline absl::StatusOr<NmsRun> NmsRunOf(OpKernelContext* ctx) {
  const Shape& boxes = ctx->input(0).shape();
  const Shape& scores = ctx->input(1).shape();
  if (absl::Status s = CheckNms(boxes, scores); !s.ok()) return s;
  return NmsRun{.batch = boxes.dim(0),
                .classes = scores.dim(1),
                .n = boxes.dim(1),
                .limit = ctx->input(2).ToInt64s()[0],
                .iou = ctx->input(3).ToDoubles()[0],
                .floor = ctx->input(4).ToDoubles()[0]};
}

// For each image i and class c: the boxes j whose score (scores [batch,
// classes, n], on the host) is above `floor`, best first (equal scores by
// position), each kept unless suppresses(i, j, k) for a box k kept before
// for that class, at most `limit` of them; one row [i, c, j] each.
template <typename T, typename Suppresses>
std::vector<std::array<int64_t, 3>> NmsSelect(const T* scores, int64_t batch,
                                              int64_t classes, int64_t n,
                                              int64_t limit, double floor,
                                              const Suppresses& suppresses) {
  std::vector<std::array<int64_t, 3>> kept;
  std::vector<int64_t> order, chosen;
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t c = 0; c < classes; ++c) {
      const T* score = scores + (i * classes + c) * n;
      order.clear();
      for (int64_t j = 0; j < n; ++j) {
        if (static_cast<double>(score[j]) > floor) order.push_back(j);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return score[p] > score[q];
      });
      chosen.clear();
      for (int64_t j : order) {
        if (static_cast<int64_t>(chosen.size()) >= limit) break;
        const bool drop =
            std::any_of(chosen.begin(), chosen.end(),
                        [&](int64_t k) { return suppresses(i, j, k); });
        if (!drop) {
          chosen.push_back(j);
          kept.push_back({i, c, j});
        }
      }
    }
  }
  return kept;
}

}  // namespace runnel

#endif  // RUNNEL_KERNELS_COMMON_NMS_H_
