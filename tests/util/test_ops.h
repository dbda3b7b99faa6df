// Test-only ops and graph helpers shared by executor_test, session_test and
// prune_test:
//   test_wait(x) -> x, once g_wait_for kernels run at the same moment;
//   test_sum(xs...) -> the element-wise f32 sum, counting runs in g_runs;
//   test_fail(x) always fails ("test_fail always fails").
#ifndef RUNNEL_TESTS_UTIL_TEST_OPS_H_
#define RUNNEL_TESTS_UTIL_TEST_OPS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "framework/graph.h"

namespace runnel::testing {

// Counts kernels running at the same moment. Tests that assert overlap
// set g_wait_for: each test_wait kernel then waits (on a condition
// variable, not a sleep) until that many run at once, so the overlap is
// observed however slow the machine; a deadline far beyond any scheduling
// delay turns a missing overlap into a failure instead of a hang.
extern std::atomic<int> g_in_flight;
extern std::atomic<int> g_max_in_flight;
extern std::atomic<int> g_runs;  // test_wait and test_sum kernels finished
extern std::mutex g_mu;
extern std::condition_variable g_cv;
extern int g_wait_for;    // guarded by g_mu
extern int g_started;     // guarded by g_mu
extern int g_hold_after;  // kernels started after this many wait ...
extern bool g_released;   // ... until this is set (guarded by g_mu)
inline constexpr auto kDeadline = std::chrono::seconds(60);

void ResetCounters(int wait_for = 1);

// Adds a node, failing the test (and returning nullptr) on error.
Node* Add(Graph& g, const std::string& name, const std::string& op,
          std::vector<NodeOut> inputs, AttrMap attrs = {},
          SourceSpan span = {});
// A const node of `t`, uniquely named "c...".
NodeOut Const(Graph& g, Tensor t);
// An f32 placeholder.
Node* Placeholder(Graph& g, const std::string& name, Shape shape,
                  SourceSpan span = {});

}  // namespace runnel::testing

#endif  // RUNNEL_TESTS_UTIL_TEST_OPS_H_
