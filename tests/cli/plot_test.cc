// `runnel plot`: reading metrics logs (steps across epochs, evaluations,
// gaps, errors), the gnuplot script for known metrics, and a PNG rendered
// through gnuplot.
#include "cli/plot.h"

#include <gtest/gtest.h>
#include <png.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli/render.h"

namespace runnel::cli {
namespace {

using Points = std::vector<std::pair<double, double>>;

// Two epochs of three and two steps, a test accuracy after each (`time`,
// seconds since the start, is not a metric).
constexpr char kTwoEpochs[] =
    R"({"report": 1, "label": "epoch 1/2", "step": 0, "time": 0.1, "loss": 2.5, "acc": 0.1}
{"report": 2, "label": "epoch 1/2", "step": 1, "loss": 1.5, "acc": 0.4}
{"report": 3, "label": "epoch 1/2", "step": 2, "loss": 1.0, "acc": 0.6}
{"report": 4, "time": 0.9, "test_acc": 0.55}

{"report": 5, "label": "epoch 2/2", "step": 0, "loss": 0.75, "acc": 0.7}
{"report": 6, "label": "epoch 2/2", "step": 1, "loss": null, "acc": 0.8}
{"report": 7, "test_acc": 0.75}
)";

const MetricSeries* Find(const MetricsLog& log, const std::string& name) {
  for (const MetricSeries& s : log.series) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

TEST(ParseMetrics, CountsStepsAcrossEpochs) {
  absl::StatusOr<MetricsLog> log = ParseMetrics("run.jsonl", kTwoEpochs);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_EQ(log->series.size(), 3u);
  EXPECT_EQ(log->series[0].name, "loss");  // in order of appearance
  EXPECT_EQ(log->series[1].name, "acc");
  EXPECT_EQ(log->series[2].name, "test_acc");
  const MetricSeries& loss = *Find(*log, "loss");
  EXPECT_FALSE(loss.evaluation);
  ASSERT_EQ(loss.points.size(), 5u);
  EXPECT_EQ(loss.points[0], std::pair(0.0, 2.5));
  EXPECT_EQ(loss.points[2], std::pair(2.0, 1.0));
  EXPECT_EQ(loss.points[3], std::pair(3.0, 0.75));  // epoch 2 goes on
  EXPECT_EQ(loss.points[4].first, 4.0);
  EXPECT_TRUE(std::isnan(loss.points[4].second));  // null: a gap
  EXPECT_EQ(Find(*log, "acc")->points[4], std::pair(4.0, 0.8));
  // Evaluations sit where the steps before them end.
  const MetricSeries& test = *Find(*log, "test_acc");
  EXPECT_TRUE(test.evaluation);
  EXPECT_EQ(test.points, (Points{{3.0, 0.55}, {5.0, 0.75}}));
  EXPECT_EQ(log->boundaries, std::vector<double>{3.0});
  EXPECT_TRUE(log->steps);
}

TEST(ParseMetrics, WithoutStepsUsesTheReportNumber) {
  absl::StatusOr<MetricsLog> log = ParseMetrics(
      "m.jsonl",
      "{\"report\": 1, \"loss\": 3}\n{\"report\": 2, \"loss\": 2}\n");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_FALSE(log->steps);
  EXPECT_FALSE(log->series[0].evaluation);
  EXPECT_EQ(log->series[0].points, (Points{{1.0, 3.0}, {2.0, 2.0}}));
}

TEST(ParseMetrics, AStepThatGoesDownStartsANewLoop) {
  absl::StatusOr<MetricsLog> log = ParseMetrics(
      "m.jsonl",
      "{\"step\": 0, \"l\": 1}\n{\"step\": 5, \"l\": 2}\n{\"step\": 0, \"l\": "
      "3}\n");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->series[0].points, (Points{{0, 1}, {5, 2}, {6, 3}}));
  EXPECT_EQ(log->boundaries, std::vector<double>{6.0});
}

TEST(ParseMetrics, SkipsALastLineStillBeingWritten) {
  absl::StatusOr<MetricsLog> log =
      ParseMetrics("m.jsonl", "{\"loss\": 3}\n{\"loss\": 2}\n{\"lo");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->series[0].points, (Points{{1.0, 3.0}, {2.0, 2.0}}));
  EXPECT_FALSE(ParseMetrics("m.jsonl", "{\"lo\n{\"loss\": 2}\n").ok());
}

TEST(ParseMetrics, ErrorsNameTheLine) {
  auto error = [](const std::string& text) {
    absl::StatusOr<MetricsLog> log = ParseMetrics("m.jsonl", text);
    return log.ok() ? std::string("ok") : std::string(log.status().message());
  };
  EXPECT_EQ(error("{\"loss\": 1}\n\n{\"loss\": 2,}\n"),
            "m.jsonl:3:12: error: malformed JSON: syntax error while parsing "
            "object key - unexpected '}'; expected string literal\n"
            "    3 | {\"loss\": 2,}\n"
            "      |            ^");
  EXPECT_EQ(error("{\"loss\": 1}\n{\"loss\": \"low\"}\n"),
            "m.jsonl:2: error: metric \"loss\" is not a number: \"low\" (only "
            "numeric metrics can be plotted)");
  EXPECT_EQ(error("{\"ok\": true}\n"),
            "m.jsonl:1: error: metric \"ok\" is not a number: true (only "
            "numeric metrics can be plotted)");
  EXPECT_EQ(error("[1, 2]\n"),
            "m.jsonl:1: error: expected a JSON object (one report), got [1,2]");
  EXPECT_EQ(error("{\"label\": 3, \"step\": 1}\n"),
            "m.jsonl:1: error: \"label\" must be a string, got 3");
}

TEST(ReadMetrics, MissingFile) {
  absl::StatusOr<MetricsLog> log = ReadMetrics("/no/such/metrics.jsonl");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().message(),
            "cannot open /no/such/metrics.jsonl: No such file or directory");
}

TEST(PlotScript, HoldsTheSeries) {
  absl::StatusOr<MetricsLog> a = ParseMetrics("runs/a.jsonl", kTwoEpochs);
  absl::StatusOr<MetricsLog> b = ParseMetrics(
      "runs/b.jsonl",
      "{\"report\": 1, \"label\": \"epoch 1/1\", \"step\": 0, \"loss\": 3}\n"
      "{\"report\": 2, \"label\": \"epoch 1/1\", \"step\": 1, \"loss\": 2}\n");
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<std::string> script = PlotScript({*a, *b}, "svg");
  ASSERT_TRUE(script.ok()) << script.status();
  auto has = [&](const std::string& text) {
    return script->find(text) != std::string::npos;
  };
  // The data of every series, NaN for the gap.
  EXPECT_TRUE(has("$d0_0 << EOD\n0 2.5\n1 1.5\n2 1\n3 0.75\n4 NaN\nEOD\n"));
  EXPECT_TRUE(has("$d0_2 << EOD\n3 0.55\n5 0.75\nEOD\n"));
  EXPECT_TRUE(has("$d1_0 << EOD\n0 3\n1 2\nEOD\n"));
  // Three panels (loss, acc, test_acc) in two columns.
  EXPECT_TRUE(has("set terminal svg noenhanced size 1120,680"));
  EXPECT_TRUE(has("set multiplot layout 2,2\n"));
  EXPECT_TRUE(has("set title \"loss\"\n"));
  EXPECT_TRUE(has("set title \"test_acc\"\n"));
  // One colour per log, named by its file; the evaluation as points; the
  // epoch boundary between steps 2 and 3.
  EXPECT_TRUE(
      has("$d0_0 every 1 using 1:2 with lines lw 2 lc rgb "
          "\"#1f77b4\" title \"a\""));
  EXPECT_TRUE(
      has("$d1_0 every 1 using 1:2 with lines lw 2 lc rgb "
          "\"#d62728\" title \"b\""));
  EXPECT_TRUE(has("$d0_2 using 1:2 with linespoints"));
  EXPECT_TRUE(has("set arrow from 2.5, graph 0 to 2.5, graph 1 nohead"));
  EXPECT_TRUE(has("set datafile missing \"NaN\"\n"));
}

TEST(PlotScript, SmoothsNoisySeries) {
  std::string text;
  for (int i = 0; i < 100; ++i) {
    text += "{\"step\": " + std::to_string(i) +
            ", \"loss\": " + std::to_string(1.0 + (i % 2 ? 0.5 : -0.5)) +
            ", \"lr\": " + std::to_string(0.01 * (100 - i)) + "}\n";
  }
  absl::StatusOr<MetricsLog> log = ParseMetrics("noisy.jsonl", text);
  ASSERT_TRUE(log.ok());
  absl::StatusOr<std::string> script = PlotScript({*log}, "png");
  ASSERT_TRUE(script.ok());
  // The loss alternates 0.5, 1.5: its moving average (window 5) is 1 or
  // near it (shorter windows at the ends), a third column; the raw values are
  // drawn faint. The smooth learning rate is drawn as it is.
  EXPECT_NE(script->find(
                "$d0_0 << EOD\n0 0.5 0.8333333333333334\n1 1.5 1\n2 0.5 0.9\n"),
            std::string::npos)
      << script->substr(0, 600);
  EXPECT_NE(script->find("$d0_0 every 1 using 1:3 with lines lw 2"),
            std::string::npos);
  EXPECT_NE(script->find("$d0_1 << EOD\n0 1\n1 0.99\n"), std::string::npos);
  EXPECT_NE(script->find("$d0_1 every 1 using 1:2 with lines lw 2"),
            std::string::npos);
  EXPECT_NE(script->find("set terminal pngcairo"), std::string::npos);
}

TEST(PlotScript, NothingToPlot) {
  absl::StatusOr<MetricsLog> log = ParseMetrics("empty.jsonl", "\n");
  ASSERT_TRUE(log.ok());
  absl::StatusOr<std::string> script = PlotScript({*log}, "svg");
  ASSERT_FALSE(script.ok());
  EXPECT_EQ(script.status().message(),
            "nothing to plot: empty.jsonl holds no reported metric");
}

// Renders kTwoEpochs through gnuplot's PNG terminal and reads it back.
TEST(WritePlot, RendersAPng) {
  if (!HasProgram("gnuplot")) GTEST_SKIP() << "gnuplot is not installed";
  char dir[] = "/tmp/runnel-plot-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string log = std::string(dir) + "/run.jsonl";
  const std::string png = std::string(dir) + "/curves.png";
  std::ofstream(log) << kTwoEpochs;
  ASSERT_TRUE(WritePlot({log}, png).ok());

  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, png.c_str()))
      << image.message;
  image.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> pixels(PNG_IMAGE_SIZE(image));
  ASSERT_TRUE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr))
      << image.message;
  // Three panels of 560x340 in two columns.
  EXPECT_EQ(image.width, 1120u);
  EXPECT_EQ(image.height, 680u);
  // Not blank: many pixels are not white, and some are the line's blue
  // (#1f77b4, give or take antialiasing).
  size_t ink = 0, blue = 0;
  for (size_t i = 0; i + 2 < pixels.size(); i += 3) {
    const int r = pixels[i], g = pixels[i + 1], b = pixels[i + 2];
    ink += r < 250 || g < 250 || b < 250;
    blue += std::abs(r - 0x1f) < 24 && std::abs(g - 0x77) < 24 &&
            std::abs(b - 0xb4) < 24;
  }
  EXPECT_GT(ink, 10000u);
  EXPECT_GT(blue, 200u);
  std::remove(log.c_str());
  std::remove(png.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace runnel::cli
