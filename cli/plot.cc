#include "cli/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "base/read_file.h"
#include "base/strings.h"
#include "cli/render.h"

namespace runnel::cli {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Series with fewer points are drawn as they are.
constexpr size_t kMinSmoothed = 20;
// At most about this many points of a raw series and of a moving average
// are drawn (the script holds them all), which keeps an SVG small.
constexpr size_t kMaxDrawn = 600, kMaxSmoothDrawn = 300;
// More loop boundaries than this are not marked (they would hide the data).
constexpr size_t kMaxBoundaries = 40;
// Panel size in pixels (SVG points).
constexpr int kPanelWidth = 560, kPanelHeight = 340;
// One colour per log (matplotlib's "tab10", whose first two contrast).
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                   "#ff7f0e", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#17becf"};

// "path:line[:col]: error: message", with the line quoted under it and a
// caret at the column, as script diagnostics are.
absl::Status LineError(const std::string& path, int line,
                       const std::string& message, std::string_view text = {},
                       int column = 0) {
  std::string out =
      StrCat(path, ":", line, column > 0 ? StrCat(":", column) : "",
             ": error: ", message);
  if (column > 0 && text.size() <= 200) {
    const std::string number = StrCat(line);
    out += StrCat("\n    ", number, " | ", text, "\n    ",
                  std::string(number.size(), ' '), " | ",
                  std::string(column - 1, ' '), "^");
  }
  return absl::InvalidArgumentError(out);
}

// `value` as the user wrote it, cut short.
std::string Shown(const Json& value) {
  std::string s = value.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// "#rrggbb" mixed with white: `keep` of the colour remains.
std::string Lighter(const std::string& color, double keep) {
  std::string out = "#";
  for (int i = 0; i < 3; ++i) {
    const int c = std::stoi(color.substr(1 + 2 * i, 2), nullptr, 16);
    out += fmt::format("{:02x}",
                       static_cast<int>(std::lround(255 - (255 - c) * keep)));
  }
  return out;
}

// A gnuplot double-quoted string.
std::string GnuplotString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string Number(double v) {
  return std::isnan(v) ? "NaN" : fmt::format("{}", v);
}

// A centred moving average over `window` points (fewer at the ends),
// ignoring gaps.
std::vector<double> MovingAverage(
    const std::vector<std::pair<double, double>>& points, size_t window) {
  const size_t n = points.size();
  std::vector<double> sum(n + 1, 0.0);
  std::vector<size_t> count(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const double v = points[i].second;
    sum[i + 1] = sum[i] + (std::isnan(v) ? 0.0 : v);
    count[i + 1] = count[i] + (std::isnan(v) ? 0 : 1);
  }
  std::vector<double> out(n);
  const size_t half = window / 2;
  for (size_t i = 0; i < n; ++i) {
    const size_t lo = i >= half ? i - half : 0;
    const size_t hi = std::min(n, i + half + 1);
    const size_t c = count[hi] - count[lo];
    out[i] = c == 0 ? kNaN : (sum[hi] - sum[lo]) / c;
  }
  return out;
}

// The moving average of a noisy series; empty when the series is short or
// smooth already (its mean distance from the average is small next to the
// average's range).
std::vector<double> Smoothed(const MetricSeries& s) {
  const size_t n = s.points.size();
  if (s.evaluation || n < kMinSmoothed) return {};
  const size_t window = std::max<size_t>(5, n / 25) | 1;
  std::vector<double> avg = MovingAverage(s.points, window);
  double lo = INFINITY, hi = -INFINITY, dev = 0;
  size_t finite = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(s.points[i].second) || std::isnan(avg[i])) continue;
    lo = std::min(lo, avg[i]);
    hi = std::max(hi, avg[i]);
    dev += std::fabs(s.points[i].second - avg[i]);
    ++finite;
  }
  if (finite == 0 || dev / finite <= 0.03 * (hi - lo)) return {};
  return avg;
}

// Whether a series mostly goes down (the legend then goes top right,
// else bottom right, out of the curves' way).
bool Falls(const MetricSeries& s) {
  std::vector<double> v;
  for (const auto& p : s.points) {
    if (!std::isnan(p.second)) v.push_back(p.second);
  }
  if (v.size() < 2) return true;
  const size_t tenth = std::max<size_t>(1, v.size() / 10);
  double first = 0, last = 0;
  for (size_t i = 0; i < tenth; ++i) {
    first += v[i];
    last += v[v.size() - 1 - i];
  }
  return last <= first;
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

}  // namespace

absl::StatusOr<MetricsLog> ParseMetrics(const std::string& path,
                                        std::string_view text) {
  MetricsLog log;
  log.path = path;
  std::vector<Json> reports;
  bool any_step = false;
  int line_no = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Json object;
    try {
      object = Json::parse(line);
    } catch (const Json::parse_error& e) {
      // A last line without its newline is still being written (the
      // training is running): leave it for the next plot.
      if (end == text.size()) break;
      // e.what(): "[json.exception.parse_error.101] parse error at line 1,
      // column 5: syntax error while parsing ..."
      std::string what = e.what();
      const size_t column = what.find("column ");
      const size_t colon = what.find(": ", column);
      if (column != std::string::npos && colon != std::string::npos) {
        what = what.substr(colon + 2);
      }
      return LineError(path, line_no, "malformed JSON: " + what, line,
                       static_cast<int>(std::min(e.byte, line.size() + 1)));
    }
    if (!object.is_object()) {
      return LineError(
          path, line_no,
          StrCat("expected a JSON object (one report), got ", Shown(object)));
    }
    for (const auto& [key, value] : object.items()) {
      if (key == "label") {
        if (!value.is_string()) {
          return LineError(
              path, line_no,
              StrCat("\"label\" must be a string, got ", Shown(value)));
        }
      } else if (!value.is_number() && !value.is_null()) {
        return LineError(
            path, line_no,
            StrCat("metric \"", key, "\" is not a number: ", Shown(value),
                   " (only numeric metrics can be plotted)"));
      }
    }
    any_step = any_step || object.contains("step");
    reports.push_back(std::move(object));
  }
  log.steps = any_step;

  auto series = [&](const std::string& name) -> MetricSeries& {
    for (MetricSeries& s : log.series) {
      if (s.name == name) return s;
    }
    log.series.push_back({name, false, {}});
    return log.series.back();
  };
  std::string label;
  double offset = 0, last_step = -1;
  for (size_t r = 0; r < reports.size(); ++r) {
    const Json& object = reports[r];
    double x;
    bool evaluation = false;
    if (!any_step) {
      x = static_cast<double>(r + 1);
    } else if (object.contains("step") && !object["step"].is_null()) {
      const double step = object["step"].get<double>();
      const std::string l =
          object.contains("label") ? object["label"].get<std::string>() : "";
      if (last_step >= 0 && (l != label || step < last_step)) {
        offset += last_step + 1;
        log.boundaries.push_back(offset);
      }
      label = l;
      last_step = step;
      x = offset + step;
    } else {
      x = offset + last_step + 1;
      evaluation = true;
    }
    for (const auto& [key, value] : object.items()) {
      if (key == "report" || key == "label" || key == "step" || key == "time")
        continue;
      MetricSeries& s = series(key);
      if (s.points.empty()) s.evaluation = evaluation;
      s.points.emplace_back(x, value.is_null() ? kNaN : value.get<double>());
    }
  }
  return log;
}

absl::StatusOr<MetricsLog> ReadMetrics(const std::string& path) {
  std::string text;
  ReadFileFailure failure;
  if (!ReadFileToString(path, &text, &failure)) {
    return failure.opened ? absl::DataLossError(StrCat("cannot read ", path,
                                                       ": ", failure.reason))
                          : absl::NotFoundError(StrCat("cannot open ", path,
                                                       ": ", failure.reason));
  }
  return ParseMetrics(path, text);
}

absl::StatusOr<std::string> PlotScript(const std::vector<MetricsLog>& logs,
                                       const std::string& format) {
  std::vector<std::string> metrics;
  for (const MetricsLog& log : logs) {
    for (const MetricSeries& s : log.series) {
      if (std::find(metrics.begin(), metrics.end(), s.name) == metrics.end()) {
        metrics.push_back(s.name);
      }
    }
  }
  if (metrics.empty()) {
    std::string names;
    for (const MetricsLog& log : logs) {
      names += (names.empty() ? "" : ", ") + log.path;
    }
    return absl::InvalidArgumentError(
        StrCat("nothing to plot: ", names, " holds no reported metric"));
  }
  // Titles: file names, or whole paths where two logs share a file name.
  std::vector<std::string> titles;
  std::multiset<std::string> names;
  for (const MetricsLog& log : logs) names.insert(BaseName(log.path));
  bool any_step = false;
  std::set<double> boundaries;
  for (const MetricsLog& log : logs) {
    titles.push_back(names.count(BaseName(log.path)) > 1 ? log.path
                                                         : BaseName(log.path));
    boundaries.insert(log.boundaries.begin(), log.boundaries.end());
    any_step = any_step || log.steps;
  }

  const int panels = static_cast<int>(metrics.size());
  const int cols = panels == 1 ? 1 : panels <= 4 ? 2 : 3;
  const int rows = (panels + cols - 1) / cols;
  std::string out =
      "# Training curves written by `runnel plot`; run with gnuplot.\n";
  if (format == "png") {
    out += StrCat("set terminal pngcairo noenhanced size ", cols * kPanelWidth,
                  ",", rows * kPanelHeight,
                  " font \"Helvetica,10\" background \"white\"\n");
  } else {
    out += StrCat("set terminal svg noenhanced size ", cols * kPanelWidth, ",",
                  rows * kPanelHeight,
                  " font \"Helvetica,11\" background \"white\"\n");
  }
  out += "set datafile missing \"NaN\"\n";

  // The data: one block per (log, metric), "step value [average]".
  std::vector<std::vector<std::vector<double>>> averages(logs.size());
  for (size_t i = 0; i < logs.size(); ++i) {
    for (size_t j = 0; j < logs[i].series.size(); ++j) {
      const MetricSeries& s = logs[i].series[j];
      averages[i].push_back(Smoothed(s));
      const std::vector<double>& avg = averages[i].back();
      out += StrCat("# ", logs[i].path, ": ", s.name,
                    s.evaluation ? " (evaluation)" : "", "\n$d", i, "_", j,
                    " << EOD\n");
      for (size_t k = 0; k < s.points.size(); ++k) {
        out +=
            StrCat(Number(s.points[k].first), " ", Number(s.points[k].second),
                   avg.empty() ? "" : " " + Number(avg[k]), "\n");
      }
      out += "EOD\n";
    }
  }

  out += StrCat(
      "set multiplot layout ", rows, ",", cols,
      logs.size() == 1 ? StrCat(" title ", GnuplotString(logs[0].path)) : "",
      "\n");
  out += "set grid lc rgb \"#dddddd\"\nset border lc rgb \"#666666\"\n";
  out += StrCat(
      "set xlabel ",
      GnuplotString(!any_step ? "report"
                    : boundaries.empty() || boundaries.size() > kMaxBoundaries
                        ? "step"
                        : "step (dotted lines: epoch boundaries)"),
      "\n");
  // One x range for every panel, so that the panels line up.
  double xmin = INFINITY, xmax = -INFINITY;
  for (const MetricsLog& log : logs) {
    for (const MetricSeries& s : log.series) {
      for (const auto& [x, v] : s.points) {
        xmin = std::min(xmin, x);
        xmax = std::max(xmax, x);
      }
    }
  }
  if (xmax > xmin) {
    out += StrCat("set xrange [", Number(xmin), ":",
                  Number(xmax + 0.02 * (xmax - xmin)), "]\n");
  }
  if (boundaries.size() <= kMaxBoundaries) {
    for (double b : boundaries) {
      out += StrCat("set arrow from ", Number(b - 0.5), ", graph 0 to ",
                    Number(b - 0.5),
                    ", graph 1 nohead back dt 3 lc rgb \"#999999\"\n");
    }
  }
  for (const std::string& metric : metrics) {
    std::vector<std::string> plots;
    bool falls = true;
    for (size_t i = 0; i < logs.size(); ++i) {
      const std::string color = kColors[i % std::size(kColors)];
      for (size_t j = 0; j < logs[i].series.size(); ++j) {
        const MetricSeries& s = logs[i].series[j];
        if (s.name != metric) continue;
        if (plots.empty()) falls = Falls(s);
        const std::string data = StrCat("$d", i, "_", j);
        const size_t n = s.points.size();
        const size_t every = (n + kMaxDrawn - 1) / kMaxDrawn;
        const size_t smooth_every = (n + kMaxSmoothDrawn - 1) / kMaxSmoothDrawn;
        const std::string title = StrCat(" title ", GnuplotString(titles[i]));
        if (s.evaluation) {
          plots.push_back(StrCat(data,
                                 " using 1:2 with linespoints pt 7 ps 0.8 "
                                 "lw 1.5 lc rgb \"",
                                 color, "\"", title));
        } else if (!averages[i][j].empty()) {
          plots.push_back(StrCat(data, " every ", every,
                                 " using 1:2 with lines lw 1 lc rgb \"",
                                 Lighter(color, 0.35), "\" notitle"));
          plots.push_back(StrCat(data, " every ", smooth_every,
                                 " using 1:3 with lines lw 2 lc rgb \"", color,
                                 "\"", title));
        } else {
          plots.push_back(StrCat(data, " every ", every,
                                 " using 1:2 with lines lw 2 lc rgb \"", color,
                                 "\"", title));
        }
      }
    }
    out += StrCat("set title ", GnuplotString(metric), "\n");
    // The y range: around a single value (which gnuplot cannot scale to),
    // or, where a series is smoothed, without the raw values' outliers
    // (the 1% at either end), as TensorBoard does, so that the first steps
    // of training do not flatten the rest.
    std::vector<double> values;
    double ymin = INFINITY, ymax = -INFINITY;
    bool smoothed = false;
    for (size_t i = 0; i < logs.size(); ++i) {
      for (size_t j = 0; j < logs[i].series.size(); ++j) {
        const MetricSeries& s = logs[i].series[j];
        if (s.name != metric) continue;
        for (const auto& [x, v] : s.points) {
          if (!std::isnan(v)) values.push_back(v);
        }
        for (double v : averages[i][j]) {
          smoothed = true;
          if (std::isnan(v)) continue;
          ymin = std::min(ymin, v);
          ymax = std::max(ymax, v);
        }
      }
    }
    std::sort(values.begin(), values.end());
    if (!values.empty() && values.front() == values.back()) {
      const double pad = std::max(0.05 * std::fabs(values[0]), 0.01);
      out += StrCat("set yrange [", Number(values[0] - pad), ":",
                    Number(values[0] + pad), "]\n");
    } else if (smoothed) {
      ymin = std::min(ymin, values[values.size() / 100]);
      ymax = std::max(ymax, values[values.size() - 1 - values.size() / 100]);
      const double pad = 0.05 * (ymax - ymin);
      out += StrCat("set yrange [", Number(ymin - pad), ":", Number(ymax + pad),
                    "]\n");
    } else {
      out += "set autoscale y\n";
    }
    out += logs.size() == 1 ? "set key off\n"
           : falls          ? "set key top right\n"
                            : "set key bottom right\n";
    out += "plot ";
    for (size_t p = 0; p < plots.size(); ++p) {
      out += (p > 0 ? ", \\\n     " : "") + plots[p];
    }
    out += "\n";
  }
  out += "unset multiplot\n";
  return out;
}

absl::Status WritePlot(const std::vector<std::string>& paths,
                       const std::string& out) {
  const std::string ext = Extension(out);
  const bool to_stdout = out.empty() || out == "-";
  if (!to_stdout && ext != "svg" && ext != "png" && ext != "gp") {
    return absl::InvalidArgumentError(
        StrCat("cannot tell the format of ", out,
               ": name it .svg or .png for a picture, or .gp for the "
               "gnuplot script"));
  }
  std::vector<MetricsLog> logs;
  for (const std::string& path : paths) {
    absl::StatusOr<MetricsLog> log = ReadMetrics(path);
    if (!log.ok()) return log.status();
    logs.push_back(*std::move(log));
  }
  absl::StatusOr<std::string> script =
      PlotScript(logs, ext == "png" ? "png" : "svg");
  if (!script.ok()) return script.status();
  if (to_stdout) {
    std::fputs(script->c_str(), stdout);
    return absl::OkStatus();
  }
  if (ext == "gp") return WriteFileAtomically(out, *script);
  return RunGnuplot(*script, out);
}

}  // namespace runnel::cli
