// A libFuzzer target: `runnel check` of arbitrary bytes, as the command
// runs it: parse (lexer, parser, syntax errors), evaluate in check mode
// (builds the graph, checks shapes, runs nothing) and render every
// diagnostic. It also asks the REPL's question, whether the text is an
// incomplete statement.
//
// Checking writes no files and prints nothing (diagnostics are rendered to
// /dev/null); it reads the standard library and any file a script imports
// or loads. A check that runs longer than kBudget is interrupted as Ctrl-C
// would (a host loop of a billion steps is a valid script), and sizes are
// bounded by the fuzzer's options (fuzz/run_fuzz.sh): input length, memory,
// the largest allocation.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"

namespace runnel::interp {
namespace {

constexpr auto kBudget = std::chrono::seconds(2);

std::FILE* DevNull() {
  static std::FILE* f = std::fopen("/dev/null", "w");
  return f;
}

// Interrupts the interpreter it watches once kBudget has passed.
class Watchdog {
 public:
  Watchdog() : thread_([this] { Loop(); }) { thread_.detach(); }

  void Watch(Interpreter* interp) {
    std::lock_guard<std::mutex> lock(mu_);
    interp_ = interp;
    deadline_ = std::chrono::steady_clock::now() + kBudget;
    changed_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      if (interp_ == nullptr) {
        changed_.wait(lock);
      } else if (changed_.wait_until(lock, deadline_) ==
                     std::cv_status::timeout &&
                 interp_ != nullptr &&
                 std::chrono::steady_clock::now() >= deadline_) {
        interp_->Interrupt();
        deadline_ += kBudget;  // and again, should it miss this one
      }
    }
  }

  std::mutex mu_;
  std::condition_variable changed_;
  Interpreter* interp_ = nullptr;  // guarded by mu_
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

void Check(std::string text) {
  static Watchdog* watchdog = new Watchdog();
  (void)lang::IsIncomplete(text);
  Options options;
  options.check_mode = true;
  options.threads = 1;
  options.out = options.err = DevNull();
  // The examples read Fashion-MNIST from arg("data", ...): not here.
  options.args = {{"data", "/nonexistent/"}};
  lang::DiagnosticSink sink(DevNull());
  Interpreter interp(options, &sink);
  watchdog->Watch(&interp);
  interp.RunSource("fuzz.rnl", std::move(text));
  watchdog->Watch(nullptr);
}

}  // namespace
}  // namespace runnel::interp

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // On a large stack, as `runnel` runs scripts: deep nesting meets the
  // parser's and the interpreter's limits, not the thread's stack.
  runnel::interp::LargeStackThread([&] {
    runnel::interp::Check(std::move(text));
  }).Join();
  return 0;
}
