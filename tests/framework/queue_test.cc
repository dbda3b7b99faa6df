// Queue tests: FIFO order, waiting enqueues and dequeues, close, the
// shuffling queue's statistics, cancellation, concurrent producers and
// consumers (framework/queue.h); and queues in a session's runs: a blocked
// dequeue ends when its run is cancelled or another partition fails.
#include "framework/queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <latch>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "common_runtime/session.h"
#include "tests/util/test_ops.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::I32;

std::shared_ptr<Queue> IntQueue(int64_t capacity, bool shuffle = false,
                                int64_t min_after = 0, uint64_t seed = 1) {
  return std::make_shared<Queue>("q",
                                 Queue::Options{.capacity = capacity,
                                                .dtypes = {DType::kI32},
                                                .shapes = {Shape{}},
                                                .shuffle = shuffle,
                                                .min_after_dequeue = min_after,
                                                .seed = seed});
}

// The outcome of an enqueue or dequeue once its callback ran.
struct Outcome {
  std::promise<absl::Status> status;
  std::promise<Queue::Tuple> value;
  std::future<absl::Status> status_future = status.get_future();
  std::future<Queue::Tuple> value_future = value.get_future();
  bool ready() {
    return status_future.wait_for(std::chrono::seconds(0)) ==
           std::future_status::ready;
  }
};

void Enqueue(Queue& q, Queue::Tuple t, bool many, Outcome* out,
             CancellationManager* cm = nullptr) {
  q.Enqueue(std::move(t), many, cm,
            [out](const absl::Status& s) { out->status.set_value(s); });
}

void Dequeue(Queue& q, int64_t n, bool many, Outcome* out,
             CancellationManager* cm = nullptr) {
  q.Dequeue(n, many, cm, [out](const absl::Status& s, Queue::Tuple t) {
    out->value.set_value(std::move(t));
    out->status.set_value(s);
  });
}

// Blocking forms, for threads.
absl::Status EnqueueNow(Queue& q, int32_t v) {
  Outcome o;
  Enqueue(q, {Tensor::Scalar<int32_t>(v)}, false, &o);
  return o.status_future.get();
}
absl::StatusOr<int32_t> DequeueNow(Queue& q) {
  Outcome o;
  Dequeue(q, 1, false, &o);
  absl::Status s = o.status_future.get();
  if (!s.ok()) return s;
  return o.value_future.get()[0].data<int32_t>()[0];
}

TEST(QueueTest, GivesElementsInTheOrderTheyCame) {
  auto q = IntQueue(10);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(EnqueueNow(*q, i).ok());
  Outcome many;
  Enqueue(*q, {I32({3, 4, 5}, {3})}, true, &many);
  ASSERT_TRUE(many.status_future.get().ok());
  EXPECT_EQ(q->size(), 6);
  EXPECT_EQ(*DequeueNow(*q), 0);
  Outcome batch;
  Dequeue(*q, 4, true, &batch);
  ASSERT_TRUE(batch.status_future.get().ok());
  ExpectTensor(batch.value_future.get()[0], DType::kI32, {4}, {1, 2, 3, 4}, 0);
  EXPECT_EQ(*DequeueNow(*q), 5);
}

TEST(QueueTest, StacksAndSplitsEveryComponent) {
  auto q = std::make_shared<Queue>(
      "pairs", Queue::Options{.capacity = 4,
                              .dtypes = {DType::kF32, DType::kI32},
                              .shapes = {Shape{2}, Shape{}}});
  Outcome in;
  Enqueue(*q, {F32({1, 2, 3, 4, 5, 6}, {3, 2}), I32({7, 8, 9}, {3})}, true,
          &in);
  ASSERT_TRUE(in.status_future.get().ok());
  Outcome one, two;
  Dequeue(*q, 1, false, &one);
  Dequeue(*q, 2, true, &two);
  ASSERT_TRUE(one.status_future.get().ok());
  ASSERT_TRUE(two.status_future.get().ok());
  Queue::Tuple a = one.value_future.get(), b = two.value_future.get();
  ExpectTensor(a[0], DType::kF32, {2}, {1, 2}, 0);
  ExpectTensor(a[1], DType::kI32, {}, {7}, 0);
  ExpectTensor(b[0], DType::kF32, {2, 2}, {3, 4, 5, 6}, 0);
  ExpectTensor(b[1], DType::kI32, {2}, {8, 9}, 0);
}

TEST(QueueTest, RefusesTuplesOfOtherTypes) {
  auto q = IntQueue(4);
  Outcome wrong;
  Enqueue(*q, {F32({1}, {})}, false, &wrong);
  absl::Status s = wrong.status_future.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("component 0 of queue 'q' is i32[]"),
            std::string::npos)
      << s;
}

TEST(QueueTest, DequeueWaitsUntilThereAreEnough) {
  auto q = IntQueue(10);
  Outcome d;
  Dequeue(*q, 3, true, &d);
  ASSERT_TRUE(EnqueueNow(*q, 1).ok());
  ASSERT_TRUE(EnqueueNow(*q, 2).ok());
  EXPECT_FALSE(d.ready());
  ASSERT_TRUE(EnqueueNow(*q, 3).ok());
  ASSERT_TRUE(d.status_future.get().ok());
  ExpectTensor(d.value_future.get()[0], DType::kI32, {3}, {1, 2, 3}, 0);
}

TEST(QueueTest, EnqueueWaitsForRoom) {
  auto q = IntQueue(2);
  Outcome e;
  Enqueue(*q, {I32({1, 2, 3}, {3})}, true, &e);
  EXPECT_FALSE(e.ready());
  EXPECT_EQ(q->size(), 2);
  EXPECT_EQ(*DequeueNow(*q), 1);
  ASSERT_TRUE(e.status_future.get().ok());
  EXPECT_EQ(q->size(), 2);
  // A batch larger than the capacity goes through a dequeue of it all.
  Outcome big;
  Dequeue(*q, 2, true, &big);
  ASSERT_TRUE(big.status_future.get().ok());
  Outcome five, out;
  Enqueue(*q, {I32({1, 2, 3, 4, 5}, {5})}, true, &five);
  Dequeue(*q, 5, true, &out);
  ASSERT_TRUE(five.status_future.get().ok());
  ASSERT_TRUE(out.status_future.get().ok());
  ExpectTensor(out.value_future.get()[0], DType::kI32, {5}, {1, 2, 3, 4, 5}, 0);
}

TEST(QueueTest, CloseEndsDequeuesThatCannotComplete) {
  auto q = IntQueue(10);
  ASSERT_TRUE(EnqueueNow(*q, 1).ok());
  ASSERT_TRUE(EnqueueNow(*q, 2).ok());
  Outcome three;
  Dequeue(*q, 3, true, &three);
  EXPECT_FALSE(three.ready());
  q->Close(false);
  absl::Status s = three.status_future.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_NE(s.message().find("is closed and has 2 of the 3 elements asked"),
            std::string::npos)
      << s;
  // The elements it had taken are back, and still dequeued in order.
  EXPECT_EQ(q->size(), 2);
  EXPECT_EQ(*DequeueNow(*q), 1);
  EXPECT_EQ(*DequeueNow(*q), 2);
  EXPECT_EQ(DequeueNow(*q).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(EnqueueNow(*q, 3).code(), absl::StatusCode::kCancelled);
}

TEST(QueueTest, CloseLetsPendingEnqueuesFinishUnlessCancelled) {
  auto q = IntQueue(1);
  ASSERT_TRUE(EnqueueNow(*q, 1).ok());
  Outcome pending;
  Enqueue(*q, {Tensor::Scalar<int32_t>(2)}, false, &pending);
  q->Close(false);
  EXPECT_FALSE(pending.ready());
  EXPECT_EQ(*DequeueNow(*q), 1);
  ASSERT_TRUE(pending.status_future.get().ok());
  EXPECT_EQ(*DequeueNow(*q), 2);

  auto r = IntQueue(1);
  ASSERT_TRUE(EnqueueNow(*r, 1).ok());
  Outcome cancelled;
  Enqueue(*r, {Tensor::Scalar<int32_t>(2)}, false, &cancelled);
  r->Close(true);
  EXPECT_EQ(cancelled.status_future.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(*DequeueNow(*r), 1);
}

TEST(QueueTest, CancellationEndsAWait) {
  auto q = IntQueue(1);
  CancellationManager cm;
  Outcome d;
  Dequeue(*q, 1, false, &d, &cm);
  EXPECT_FALSE(d.ready());
  cm.StartCancel();
  EXPECT_EQ(d.status_future.get().code(), absl::StatusCode::kCancelled);
  // After cancelling, new attempts on that manager fail at once; the
  // queue itself goes on.
  Outcome late;
  Enqueue(*q, {Tensor::Scalar<int32_t>(5)}, false, &late, &cm);
  EXPECT_EQ(late.status_future.get().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(EnqueueNow(*q, 6).ok());
  EXPECT_EQ(*DequeueNow(*q), 6);
}

TEST(QueueTest, CancellingAPartialDequeueGivesItsElementsBack) {
  auto q = IntQueue(4);
  CancellationManager cm;
  ASSERT_TRUE(EnqueueNow(*q, 1).ok());
  Outcome d;
  Dequeue(*q, 3, true, &d, &cm);
  EXPECT_EQ(q->size(), 0);
  cm.StartCancel();
  EXPECT_EQ(d.status_future.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(q->size(), 1);
  EXPECT_EQ(*DequeueNow(*q), 1);
}

// Dequeues everything of a closed shuffling queue holding 0..n-1.
std::vector<int32_t> Drain(int n, uint64_t seed) {
  auto q = IntQueue(n, /*shuffle=*/true, 0, seed);
  std::vector<int32_t> values(n);
  for (int i = 0; i < n; ++i) values[i] = i;
  Outcome in;
  Enqueue(*q, {Tensor::FromVector(values)}, true, &in);
  EXPECT_TRUE(in.status_future.get().ok());
  q->Close(false);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(*DequeueNow(*q));
  return out;
}

TEST(QueueTest, ShuffleGivesEveryElementOnceInARepeatableOrder) {
  const std::vector<int32_t> order = Drain(1000, 7);
  std::vector<int32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  // Not FIFO: few elements come out where they went in.
  int in_place = 0;
  for (int i = 0; i < 1000; ++i) in_place += order[i] == i;
  EXPECT_LT(in_place, 20);
  EXPECT_EQ(Drain(1000, 7), order);  // the same seed, the same order
  EXPECT_NE(Drain(1000, 8), order);
}

TEST(QueueTest, ShuffleDrawsUniformly) {
  // Which of 10 elements comes out first, over 2000 seeds: 200 each
  // expected; a count outside [130, 270] is over 5 standard deviations.
  std::map<int32_t, int> first;
  for (uint64_t seed = 0; seed < 2000; ++seed) ++first[Drain(10, seed)[0]];
  ASSERT_EQ(first.size(), 10u);
  for (const auto& [value, count] : first) {
    EXPECT_GT(count, 130) << value;
    EXPECT_LT(count, 270) << value;
  }
}

TEST(QueueTest, ShuffleKeepsMinAfterDequeueUntilClosed) {
  auto q = IntQueue(10, /*shuffle=*/true, /*min_after=*/3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(EnqueueNow(*q, i).ok());
  Outcome d;
  Dequeue(*q, 1, false, &d);
  EXPECT_FALSE(d.ready());
  ASSERT_TRUE(EnqueueNow(*q, 3).ok());
  ASSERT_TRUE(d.status_future.get().ok());
  EXPECT_EQ(q->size(), 3);
  Outcome rest;
  Dequeue(*q, 3, true, &rest);
  EXPECT_FALSE(rest.ready());
  q->Close(false);  // closed: the rest comes out
  ASSERT_TRUE(rest.status_future.get().ok());
  EXPECT_EQ(q->size(), 0);
}

TEST(QueueTest, ConcurrentProducersAndConsumersLoseNothing) {
  constexpr int kProducers = 4, kConsumers = 3, kEach = 500;
  auto q = IntQueue(8);
  std::latch start(kProducers + kConsumers);
  std::vector<std::thread> producers, consumers;
  std::vector<std::vector<int32_t>> got(kConsumers);
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        ASSERT_TRUE(EnqueueNow(*q, p * kEach + i).ok());
      }
    });
  }
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&, c] {
      start.arrive_and_wait();
      while (true) {
        absl::StatusOr<int32_t> v = DequeueNow(*q);
        if (!v.ok()) {
          EXPECT_EQ(v.status().code(), absl::StatusCode::kOutOfRange);
          return;
        }
        got[c].push_back(*v);
      }
    });
  }
  for (std::thread& t : producers) t.join();
  q->Close(false);
  for (std::thread& t : consumers) t.join();
  std::vector<int32_t> all;
  for (const auto& g : got) all.insert(all.end(), g.begin(), g.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kProducers * kEach});
  for (int i = 0; i < kProducers * kEach; ++i) ASSERT_EQ(all[i], i);
  // Each consumer saw each producer's elements in the order made.
  for (const auto& g : got) {
    std::vector<int32_t> last(kProducers, -1);
    for (int32_t v : g) {
      EXPECT_GT(v, last[v / kEach]);
      last[v / kEach] = v;
    }
  }
}

// ---- in a session -----------------------------------------------------------

struct QueueGraph {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  Node* queue = nullptr;
  AttrMap attrs;  // of every op on the queue
};

QueueGraph MakeQueueGraph(const std::string& device = "") {
  QueueGraph g;
  SetQueueComponents({{DType::kF32}, {Shape{2}}}, &g.attrs);
  g.attrs["queue"] = std::string("q");
  AttrMap attrs = g.attrs;
  attrs["capacity"] = int64_t{4};
  absl::StatusOr<Node*> q = g.graph->AddNode(
      {.name = "q", .op = "queue", .attrs = attrs, .device = device});
  EXPECT_TRUE(q.ok()) << q.status();
  g.queue = *q;
  return g;
}

Node* AddOp(QueueGraph& g, const std::string& name, const std::string& op,
            std::vector<NodeOut> inputs, const std::string& device = "") {
  absl::StatusOr<Node*> n = g.graph->AddNode({.name = name,
                                              .op = op,
                                              .inputs = std::move(inputs),
                                              .attrs = g.attrs,
                                              .device = device});
  EXPECT_TRUE(n.ok()) << n.status();
  return *n;
}

TEST(QueueSessionTest, RunsEnqueueAndDequeue) {
  QueueGraph g = MakeQueueGraph();
  Node* x = testing::Placeholder(*g.graph, "x", {-1, 2});
  Node* put = AddOp(g, "put", "enqueue_many", {{g.queue, 0}, {x, 0}});
  Node* get = AddOp(g, "get", "dequeue", {{g.queue, 0}});
  Node* size = AddOp(g, "size", "queue_size", {{g.queue, 0}});
  Session s(g.graph, {.num_threads = 2});
  ASSERT_TRUE(s.Run({{{x, 0}, F32({1, 2, 3, 4}, {2, 2})}}, {}, {put}).ok());
  auto n = s.Run(Session::Feeds{}, {{size, 0}}, {});
  ASSERT_TRUE(n.ok()) << n.status();
  ExpectTensor((*n)[0], DType::kI32, {}, {2}, 0);
  auto out = s.Run(Session::Feeds{}, {{get, 0}}, {});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], DType::kF32, {2}, {1, 2}, 0);
}

TEST(QueueSessionTest, CancellingARunEndsABlockedDequeue) {
  QueueGraph g = MakeQueueGraph();
  Node* get = AddOp(g, "get", "dequeue", {{g.queue, 0}});
  Session s(g.graph, {.num_threads = 2});
  std::atomic<bool> cancelled{false};
  auto run = std::async(std::launch::async, [&] {
    return s.Run(Session::Feeds{}, {{get, 0}}, {}, {.cancelled = &cancelled});
  });
  // Whether the dequeue is waiting yet or not, the run must end.
  cancelled = true;
  absl::StatusOr<std::vector<Tensor>> out = run.get();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled);
  // The queue is intact.
  Node* size = AddOp(g, "size", "queue_size", {{g.queue, 0}});
  auto n = s.Run(Session::Feeds{}, {{size, 0}}, {});
  ASSERT_TRUE(n.ok()) << n.status();
  ExpectTensor((*n)[0], DType::kI32, {}, {0}, 0);
}

TEST(QueueSessionTest, AFailingPartitionEndsABlockedDequeue) {
  QueueGraph g = MakeQueueGraph("/cpu:0");
  Node* get = AddOp(g, "get", "dequeue", {{g.queue, 0}}, "/cpu:0");
  Node* c = *g.graph->AddConst(F32({1}, {1}), "c");
  absl::StatusOr<Node*> bad = g.graph->AddNode({.name = "bad",
                                                .op = "test_fail",
                                                .inputs = {{c, 0}},
                                                .device = "/cpu:1"});
  ASSERT_TRUE(bad.ok()) << bad.status();
  Session s(g.graph, {.num_threads = 2, .cpu_devices = 2});
  auto out = s.Run(Session::Feeds{}, {{get, 0}, {*bad, 0}}, {});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("test_fail always fails"),
            std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace runnel
