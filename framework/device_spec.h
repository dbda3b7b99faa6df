// Device specs: what `device "..." { }` blocks (docs/language.md §4) ask
// for, and what the placer matches devices against:
// `/job:NAME/task:N/device:TYPE:N`, any part optional, with the short forms
// `/cpu:0`, `/gpu:1`, `/job:ps`. A task may be `*` (variables spread over
// the matching tasks). Nested blocks refine the outer spec field by field.
#ifndef RUNNEL_FRAMEWORK_DEVICE_SPEC_H_
#define RUNNEL_FRAMEWORK_DEVICE_SPEC_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace runnel {

struct DeviceSpec {
  std::string job;      // "" = any
  std::string replica;  // "" = any; else digits
  std::string task;     // "" = any; digits or "*"
  std::string type;     // "" = any; "cpu" or "gpu"
  std::string index;    // "" = any; digits or "*"

  // Parses a spec; InvalidArgument says what is wrong with it.
  static absl::StatusOr<DeviceSpec> Parse(std::string_view text);
  // This spec with the fields `inner` sets replaced.
  DeviceSpec Refine(const DeviceSpec& inner) const;
  // "/job:ps/task:0/device:cpu:0"; "" when nothing is set.
  std::string ToString() const;
  // Whether the device named by the complete spec `device` satisfies this
  // one: each field set here is equal there (a `*` task or index matches
  // any).
  bool Matches(const DeviceSpec& device) const;
  // One spec meeting both (colocated nodes must share a device);
  // InvalidArgument names the first field on which they disagree.
  static absl::StatusOr<DeviceSpec> Merge(const DeviceSpec& a,
                                          const DeviceSpec& b);
};

// "/job:ps/task:0" for "/job:ps/task:0/device:cpu:0": the task part of a
// full device name (the placer spreads `task:*` requests over tasks; a
// cluster's session runs each task's partition there).
std::string TaskOfDevice(std::string_view device);

}  // namespace runnel

#endif  // RUNNEL_FRAMEWORK_DEVICE_SPEC_H_
