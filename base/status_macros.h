// Early-return helpers for absl::Status and absl::StatusOr.
#ifndef RUNNEL_BASE_STATUS_MACROS_H_
#define RUNNEL_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RN_CONCAT_INNER_(a, b) a##b
#define RN_CONCAT_(a, b) RN_CONCAT_INNER_(a, b)

#define RN_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status rn_status_ = (expr);      \
    if (!rn_status_.ok()) return rn_status_; \
  } while (0)

#define RN_ASSIGN_OR_RETURN(lhs, expr) \
  RN_ASSIGN_OR_RETURN_IMPL_(RN_CONCAT_(rn_statusor_, __LINE__), lhs, expr)

#define RN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(*tmp)

#endif  // RUNNEL_BASE_STATUS_MACROS_H_
