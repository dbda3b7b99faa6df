// Training curves from metrics logs (`runnel run --metrics FILE`), drawn
// by gnuplot: `runnel plot` and the REPL's `:plot`.
//
// A metrics log has one JSON object per `report(...)`:
//   {"report": 7, "label": "epoch 1/10", "step": 6, "loss": 0.41, "acc": 0.86}
// "label" and "step" name the innermost progress loop and how many of its
// items were done. The x axis is the step counted across loops: when the
// label changes or the step goes down a new loop (an epoch) has begun, and
// the plot marks the boundary. A report made outside any progress loop (no
// "step") is an evaluation, drawn as points at the step it follows. A log
// with no steps at all is drawn against the report number.
#ifndef RUNNEL_CLI_PLOT_H_
#define RUNNEL_CLI_PLOT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace runnel::cli {

struct MetricSeries {
  std::string name;
  bool evaluation = false;  // drawn as points
  // (step, value); a NaN value (JSON null: the value was not finite) is a
  // gap.
  std::vector<std::pair<double, double>> points;
};

struct MetricsLog {
  std::string path;
  std::vector<MetricSeries> series;  // in order of first appearance
  std::vector<double> boundaries;    // steps where a new loop began
  bool steps = true;                 // false: x is the report number
};

// Parses the text of a metrics log read from `path`. Errors name the line
// (and the column of a JSON syntax error) as "path:line:col: error: ...".
// A malformed last line without a newline is skipped: the log is still
// being written.
absl::StatusOr<MetricsLog> ParseMetrics(const std::string& path,
                                        std::string_view text);
absl::StatusOr<MetricsLog> ReadMetrics(const std::string& path);

// The gnuplot script drawing `logs`: one panel per metric (in order of
// first appearance), one line per log in the same colour in every panel,
// with the raw values faint and a moving average over them where a series
// is noisy. `format` is "svg" or "png" (the script sets the terminal, not
// the output). Fails when the logs hold no metric.
absl::StatusOr<std::string> PlotScript(const std::vector<MetricsLog>& logs,
                                       const std::string& format);

// Reads `paths` and writes their curves to `out` (OUT.svg or OUT.png, drawn
// by gnuplot; OUT.gp, or stdout for "" and "-", the script itself).
absl::Status WritePlot(const std::vector<std::string>& paths,
                       const std::string& out);

}  // namespace runnel::cli

#endif  // RUNNEL_CLI_PLOT_H_
