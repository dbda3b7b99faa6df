// Progress bars (`progress(iterable, label)`) and metrics (`report(...)`).
//
// On a terminal the bar is redrawn in place on stderr with the count, rate,
// ETA and the latest reported metrics; otherwise a plain line is written at
// most every few seconds and once at the end. With a metrics file, every
// `report` appends one JSON object per line.
#ifndef RUNNEL_INTERPRETER_PROGRESS_H_
#define RUNNEL_INTERPRETER_PROGRESS_H_

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace runnel::interp {

class Reporter {
 public:
  // `quiet`: draw nothing and write no metrics (`runnel check`).
  Reporter(std::FILE* err, bool quiet);
  ~Reporter();

  // Opens (appending) the metrics file.
  absl::Status OpenMetrics(const std::string& path);

  // A bar starts, advances and ends; bars nest (the innermost is drawn).
  void Begin(std::string label, int64_t total);
  void Step();
  void End();

  // `values` are (name, JSON value) pairs; `display` the text for the bar.
  absl::Status Report(
      const std::vector<std::pair<std::string, std::string>>& json_values,
      const std::vector<std::pair<std::string, std::string>>& display_values);

 private:
  struct Bar {
    std::string label;
    int64_t total = -1;
    int64_t done = 0;
    std::chrono::steady_clock::time_point start, last_draw;
    bool drawn = false;
  };
  void Draw(Bar& bar, bool final);
  std::string Line(const Bar& bar) const;

  std::FILE* err_;
  bool quiet_;
  bool tty_;
  std::FILE* metrics_ = nullptr;
  int64_t reports_ = 0;
  // Metrics lines carry "time": seconds since this reporter was made.
  std::chrono::steady_clock::time_point born_ =
      std::chrono::steady_clock::now();
  std::vector<Bar> bars_;
  std::vector<std::pair<std::string, std::string>> shown_;  // latest metrics
};

}  // namespace runnel::interp

#endif  // RUNNEL_INTERPRETER_PROGRESS_H_
