// Trains a softmax classifier on Fashion-MNIST through the runtime API
// alone: the graph, its hand-written gradient step, variables, a session
// run per batch, a progress bar, and test accuracy at the end.
//
//   build-release/fashion_softmax [--epochs N] [--threads N] [--data DIR]
//
// Until autodiff arrives, the gradient of the mean cross-entropy is built
// by hand: dL/dlogits = (softmax(logits) - one_hot(y)) / batch.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include "base/status_macros.h"
#include "base/strings.h"
#include "common_runtime/eager.h"
#include "common_runtime/session.h"
#include "io/idx_reader.h"

namespace runnel {
namespace {

struct Options {
  int epochs = 5;
  int threads = 0;
  int batch = 128;
  float lr = 0.2f;
  std::string data = "/usr/share/datasets/fashion-mnist/";
};

// Builds the model graph step by step; each helper adds one node.
class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}
  absl::StatusOr<NodeOut> Op(const std::string& name, const std::string& op,
                             std::vector<NodeOut> inputs, AttrMap attrs = {}) {
    RN_ASSIGN_OR_RETURN(Node * n, g_.AddNode({.name = name,
                                              .op = op,
                                              .inputs = std::move(inputs),
                                              .attrs = std::move(attrs)}));
    return NodeOut{n, 0};
  }
  absl::StatusOr<NodeOut> Const(const std::string& name, Tensor t) {
    RN_ASSIGN_OR_RETURN(Node * n, g_.AddConst(std::move(t), name));
    return NodeOut{n, 0};
  }
  // A zero-initialised f32 variable.
  absl::StatusOr<NodeOut> ZerosVar(const std::string& name, Shape shape) {
    std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
    RN_ASSIGN_OR_RETURN(NodeOut dims_c,
                        Const(name + "/shape", Tensor::FromVector(dims)));
    RN_ASSIGN_OR_RETURN(NodeOut zero,
                        Const(name + "/zero", Tensor::Scalar(0.0f)));
    RN_ASSIGN_OR_RETURN(NodeOut init,
                        Op(name + "/init", "fill", {dims_c, zero}));
    return Op(name, "variable", {},
              {{"dtype", DType::kF32},
               {"shape", shape},
               {"initializer", init.node->name() + ":0"}});
  }

 private:
  Graph& g_;
};

struct Model {
  NodeOut x, y, loss, acc;
  Node* train = nullptr;
};

absl::StatusOr<Model> BuildModel(Graph& g, float lr) {
  Builder b(g);
  Model m;
  RN_ASSIGN_OR_RETURN(
      m.x, b.Op("x", "placeholder", {},
                {{"dtype", DType::kF32}, {"shape", Shape{-1, 784}}}));
  RN_ASSIGN_OR_RETURN(m.y,
                      b.Op("y", "placeholder", {},
                           {{"dtype", DType::kI32}, {"shape", Shape{-1}}}));
  RN_ASSIGN_OR_RETURN(NodeOut w, b.ZerosVar("w", Shape{784, 10}));
  RN_ASSIGN_OR_RETURN(NodeOut bias, b.ZerosVar("b", Shape{10}));
  RN_ASSIGN_OR_RETURN(NodeOut xw, b.Op("xw", "matmul", {m.x, w}));
  RN_ASSIGN_OR_RETURN(NodeOut logits, b.Op("logits", "bias_add", {xw, bias}));
  RN_ASSIGN_OR_RETURN(NodeOut xent, b.Op("xent", "sparse_softmax_cross_entropy",
                                         {logits, m.y}));
  RN_ASSIGN_OR_RETURN(m.loss, b.Op("loss", "mean", {xent}));
  RN_ASSIGN_OR_RETURN(NodeOut pred,
                      b.Op("pred", "argmax", {logits}, {{"axis", int64_t{1}}}));
  RN_ASSIGN_OR_RETURN(NodeOut hit, b.Op("hit", "equal", {pred, m.y}));
  RN_ASSIGN_OR_RETURN(NodeOut hitf,
                      b.Op("hitf", "cast", {hit}, {{"dtype", DType::kF32}}));
  RN_ASSIGN_OR_RETURN(m.acc, b.Op("acc", "mean", {hitf}));

  // Gradient step: d = (softmax - one_hot) * lr / batch.
  RN_ASSIGN_OR_RETURN(NodeOut probs, b.Op("probs", "softmax", {logits}));
  RN_ASSIGN_OR_RETURN(NodeOut onehot, b.Op("onehot", "one_hot", {m.y},
                                           {{"depth", int64_t{10}}}));
  RN_ASSIGN_OR_RETURN(NodeOut diff, b.Op("diff", "sub", {probs, onehot}));
  RN_ASSIGN_OR_RETURN(NodeOut n, b.Op("n", "size", {m.y}));
  RN_ASSIGN_OR_RETURN(NodeOut nf,
                      b.Op("nf", "cast", {n}, {{"dtype", DType::kF32}}));
  RN_ASSIGN_OR_RETURN(NodeOut lr_c, b.Const("lr", Tensor::Scalar(lr)));
  RN_ASSIGN_OR_RETURN(NodeOut scale, b.Op("scale", "div", {lr_c, nf}));
  RN_ASSIGN_OR_RETURN(NodeOut d, b.Op("d", "mul", {diff, scale}));
  RN_ASSIGN_OR_RETURN(
      NodeOut gw, b.Op("grad_w", "matmul", {m.x, d}, {{"transpose_a", true}}));
  RN_ASSIGN_OR_RETURN(NodeOut gb,
                      b.Op("grad_b", "sum", {d}, {{"axis", int64_t{0}}}));
  RN_ASSIGN_OR_RETURN(NodeOut upd_w, b.Op("update_w", "assign_sub", {w, gw}));
  RN_ASSIGN_OR_RETURN(NodeOut upd_b,
                      b.Op("update_b", "assign_sub", {bias, gb}));
  RN_ASSIGN_OR_RETURN(m.train,
                      g.AddNode({.name = "train",
                                 .op = "noop",
                                 .control_inputs = {upd_w.node, upd_b.node}}));
  return m;
}

struct Data {
  Tensor images;  // f32 [n, 784] in [0, 1]
  Tensor labels;  // i32 [n]
};

// Loads one split, converting with eager ops (the same kernels as graphs).
absl::StatusOr<Data> Load(EagerContext& eager, const std::string& dir,
                          const std::string& prefix) {
  RN_ASSIGN_OR_RETURN(Tensor raw,
                      ReadIdx(dir + prefix + "-images-idx3-ubyte.gz"));
  RN_ASSIGN_OR_RETURN(Tensor lab,
                      ReadIdx(dir + prefix + "-labels-idx1-ubyte.gz"));
  Data d;
  RN_ASSIGN_OR_RETURN(Tensor f,
                      eager.Execute1("cast", {raw}, {{"dtype", DType::kF32}}));
  RN_ASSIGN_OR_RETURN(
      Tensor scaled, eager.Execute1("mul", {f, Tensor::Scalar(1.0f / 255.0f)}));
  RN_ASSIGN_OR_RETURN(d.images, scaled.Reshaped(Shape{raw.dim(0), 784}));
  RN_ASSIGN_OR_RETURN(d.labels,
                      eager.Execute1("cast", {lab}, {{"dtype", DType::kI32}}));
  return d;
}

// Rows `idx[begin, end)` of `t`, copied into a new tensor.
Tensor Rows(const Tensor& t, const std::vector<int64_t>& idx, size_t begin,
            size_t end) {
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] = static_cast<int64_t>(end - begin);
  Tensor out(t.dtype(), Shape(dims));
  const size_t row = t.bytes() / t.dim(0);
  auto* dst = static_cast<char*>(out.raw_data());
  const auto* src = static_cast<const char*>(t.raw_data());
  for (size_t i = begin; i < end; ++i) {
    std::memcpy(dst + (i - begin) * row, src + idx[i] * row, row);
  }
  return out;
}

// A progress bar on a terminal; a plain line every few seconds otherwise.
class Progress {
 public:
  Progress(std::string label, int total)
      : label_(std::move(label)),
        total_(total),
        tty_(isatty(2)),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}
  void Update(int done, float loss) {
    auto now = std::chrono::steady_clock::now();
    double secs = std::chrono::duration<double>(now - start_).count();
    bool final = done == total_;
    if (!final && now - last_ < (tty_ ? std::chrono::milliseconds(100)
                                      : std::chrono::milliseconds(5000))) {
      return;
    }
    last_ = now;
    double rate = done / std::max(secs, 1e-9);
    double eta = (total_ - done) / std::max(rate, 1e-9);
    int width = 30, filled = total_ ? width * done / total_ : width;
    std::string bar =
        std::string(filled, '#') + std::string(width - filled, '.');
    std::string line =
        fmt::format("{} [{}] {}/{} {:.0f} it/s eta {:.0f}s loss={:.4f}", label_,
                    bar, done, total_, rate, eta, loss);
    if (tty_) {
      std::fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

 private:
  std::string label_;
  int total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

absl::Status Main(const Options& opt) {
  EagerContext eager({.num_threads = opt.threads});
  RN_ASSIGN_OR_RETURN(Data train, Load(eager, opt.data, "train"));
  RN_ASSIGN_OR_RETURN(Data test, Load(eager, opt.data, "t10k"));
  std::fprintf(stderr, "fashion-mnist: %lld training and %lld test images\n",
               (long long)train.images.dim(0), (long long)test.images.dim(0));

  auto g = std::make_shared<Graph>();
  RN_ASSIGN_OR_RETURN(Model m, BuildModel(*g, opt.lr));
  Session session(g, {.num_threads = opt.threads, .seed = 0});

  const size_t n = train.images.dim(0);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(0);
  const int steps = static_cast<int>((n + opt.batch - 1) / opt.batch);
  for (int epoch = 0; epoch < opt.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    Progress bar(fmt::format("epoch {}", epoch), steps);
    for (int s = 0; s < steps; ++s) {
      size_t begin = s * size_t(opt.batch),
             end = std::min(n, begin + opt.batch);
      Session::Feeds feeds = {{m.x, Rows(train.images, order, begin, end)},
                              {m.y, Rows(train.labels, order, begin, end)}};
      RN_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          session.Run(feeds, {m.loss}, {m.train}));
      bar.Update(s + 1, out[0].at<float>(0));
    }
  }
  RN_ASSIGN_OR_RETURN(
      std::vector<Tensor> acc,
      session.Run({{m.x, test.images}, {m.y, test.labels}}, {m.acc}, {}));
  std::printf("test accuracy %.4f\n", acc[0].at<float>(0));
  return absl::OkStatus();
}

}  // namespace
}  // namespace runnel

int main(int argc, char** argv) {
  runnel::Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 < argc && a == "--epochs") {
      opt.epochs = std::atoi(argv[++i]);
    } else if (i + 1 < argc && a == "--threads") {
      opt.threads = std::atoi(argv[++i]);
    } else if (i + 1 < argc && a == "--data") {
      opt.data = std::string(argv[++i]) + "/";
    } else {
      std::fprintf(
          stderr,
          "usage: fashion_softmax [--epochs N] [--threads N] [--data DIR]\n");
      return 2;
    }
  }
  absl::Status s = runnel::Main(opt);
  if (!s.ok()) {
    std::fprintf(stderr, "fashion_softmax: %s\n",
                 std::string(runnel::ToStd(s.message())).c_str());
    return 1;
  }
  return 0;
}
