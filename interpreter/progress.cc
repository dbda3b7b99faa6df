#include "interpreter/progress.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/strings.h"

namespace runnel::interp {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string Duration(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) {
    return fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60);
  }
  return fmt::format("{:02}:{:02}", t / 60, t % 60);
}

}  // namespace

Reporter::Reporter(std::FILE* err, bool quiet)
    : err_(err), quiet_(quiet), tty_(isatty(fileno(err)) != 0) {}

Reporter::~Reporter() {
  if (metrics_ != nullptr) std::fclose(metrics_);
}

absl::Status Reporter::OpenMetrics(const std::string& path) {
  if (quiet_) return absl::OkStatus();
  metrics_ = std::fopen(path.c_str(), "a");
  if (metrics_ == nullptr) {
    return absl::InvalidArgumentError(StrCat("cannot open the metrics file ",
                                             path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void Reporter::Begin(std::string label, int64_t total) {
  Bar bar;
  bar.label = std::move(label);
  bar.total = total;
  bar.start = bar.last_draw = Clock::now();
  bars_.push_back(std::move(bar));
}

void Reporter::Step() {
  if (bars_.empty()) return;
  Bar& bar = bars_.back();
  ++bar.done;
  Draw(bar, false);
}

void Reporter::End() {
  if (bars_.empty()) return;
  Draw(bars_.back(), true);
  bars_.pop_back();
}

std::string Reporter::Line(const Bar& bar) const {
  const double elapsed = Seconds(Clock::now() - bar.start);
  const double rate = elapsed > 0 ? bar.done / elapsed : 0;
  std::string s = bar.label.empty() ? "" : bar.label + " ";
  if (bar.total >= 0) {
    const int width = 24;
    int filled =
        bar.total > 0 ? static_cast<int>(width * bar.done / bar.total) : width;
    if (tty_) {
      s += "[" + std::string(filled, '=') + std::string(width - filled, ' ') +
           "] ";
    }
    s += StrCat(bar.done, "/", bar.total);
  } else {
    s += StrCat(bar.done);
  }
  s += fmt::format(" {:.1f} it/s {}", rate, Duration(elapsed));
  if (bar.total >= 0 && bar.done < bar.total && rate > 0) {
    s += " ETA " + Duration((bar.total - bar.done) / rate);
  }
  for (const auto& [name, value] : shown_) s += StrCat(" ", name, "=", value);
  return s;
}

void Reporter::Draw(Bar& bar, bool final) {
  if (quiet_) return;
  const Clock::time_point now = Clock::now();
  const double since = Seconds(now - bar.last_draw);
  if (tty_) {
    if (!final && bar.drawn && since < 0.1) return;
    std::fprintf(err_, "\r\033[K%s%s", Line(bar).c_str(), final ? "\n" : "");
  } else {
    // Plain lines: at most every 5 seconds, and a last one when the bar
    // has run for a second or more (quick loops stay silent).
    if (!final && since < 5.0) return;
    if (final && !bar.drawn && Seconds(now - bar.start) < 1.0) return;
    std::fprintf(err_, "%s\n", Line(bar).c_str());
  }
  std::fflush(err_);
  bar.drawn = true;
  bar.last_draw = now;
}

absl::Status Reporter::Report(
    const std::vector<std::pair<std::string, std::string>>& json_values,
    const std::vector<std::pair<std::string, std::string>>& display_values) {
  if (quiet_) return absl::OkStatus();
  ++reports_;
  for (const auto& [name, value] : display_values) {
    bool found = false;
    for (auto& [n, v] : shown_) {
      if (n == name) {
        v = value;
        found = true;
      }
    }
    if (!found) shown_.emplace_back(name, value);
  }
  if (metrics_ != nullptr) {
    std::string line = StrCat("{\"report\": ", reports_);
    if (!bars_.empty()) {
      line += StrCat(", \"label\": ", JsonString(bars_.back().label),
                     ", \"step\": ", bars_.back().done);
    }
    line += fmt::format(", \"time\": {:.6f}",
                        Seconds(std::chrono::steady_clock::now() - born_));
    for (const auto& [name, value] : json_values) {
      line += StrCat(", ", JsonString(name), ": ", value);
    }
    line += "}\n";
    if (std::fputs(line.c_str(), metrics_) < 0 || std::fflush(metrics_) != 0) {
      return absl::InternalError(
          StrCat("cannot write the metrics file: ", std::strerror(errno)));
    }
  }
  if (bars_.empty() && !tty_) return absl::OkStatus();
  if (!bars_.empty()) Draw(bars_.back(), false);
  return absl::OkStatus();
}

}  // namespace runnel::interp
