#include "io/event_file.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "io/little_endian.h"

namespace runnel {
namespace {

// The table of the reflected CRC-32C polynomial, one entry per byte.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

double WallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ShapeToTensorBoard(const Shape& s, tensorboard::TensorShapeProto* p) {
  if (s.unknown_rank()) {
    p->set_unknown_rank(true);
    return;
  }
  for (int i = 0; i < s.rank(); ++i) p->add_dim()->set_size(s.dim(i));
}

tensorboard::DataType DataTypeOf(DType d) {
  return static_cast<tensorboard::DataType>(InfoOf(d).tensorflow_code);
}

// A Runnel attribute as TensorBoard's; a tensor (a constant's value) shows
// as its dtype and shape, which is what the graph dashboard has room for.
tensorboard::AttrValue ToTensorBoard(const AttrValue& v) {
  tensorboard::AttrValue out;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          out.set_i(x);
        } else if constexpr (std::is_same_v<T, double>) {
          out.set_f(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, bool>) {
          out.set_b(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out.set_s(x);
        } else if constexpr (std::is_same_v<T, DType>) {
          out.set_type(DataTypeOf(x));
        } else if constexpr (std::is_same_v<T, Shape>) {
          ShapeToTensorBoard(x, out.mutable_shape());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t i : x) out.mutable_list()->add_i(i);
        } else {
          out.set_s(StrCat(DTypeName(x.dtype()), x.shape().ToString()));
        }
      },
      v);
  return out;
}

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  crc = ~crc;
  for (char ch : data) {
    crc = kCrcTable[(crc ^ static_cast<unsigned char>(ch)) & 0xff] ^ (crc >> 8);
  }
  return ~crc;
}

uint32_t MaskedCrc32c(std::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string FrameRecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  PutU64(&out, data.size());
  PutU32(&out, MaskedCrc32c(out));
  out.append(data);
  PutU32(&out, MaskedCrc32c(data));
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadRecords(const std::string& path) {
  RN_ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(path));
  std::vector<std::string> records;
  FieldReader r(bytes);
  while (r.remaining() >= 12) {
    const size_t at = r.position();
    uint64_t length = 0;
    uint32_t length_crc = 0, data_crc = 0;
    r.GetU64(&length);
    r.GetU32(&length_crc);
    if (length_crc != MaskedCrc32c(std::string_view(bytes).substr(at, 8))) {
      return absl::DataLossError(
          StrCat(path, ": the record at byte ", at, " has a corrupt length"));
    }
    std::string data;
    if (r.remaining() < 4 || r.remaining() - 4 < length) break;  // unfinished
    r.GetBytes(length, &data);
    r.GetU32(&data_crc);
    if (data_crc != MaskedCrc32c(data)) {
      return absl::DataLossError(
          StrCat(path, ": the record at byte ", at, " is corrupt"));
    }
    records.push_back(std::move(data));
  }
  return records;
}

tensorboard::GraphDef ToTensorBoardGraph(const Graph& graph) {
  tensorboard::GraphDef def;
  for (const Node* node : graph.nodes()) {
    tensorboard::NodeDef* n = def.add_node();
    n->set_name(node->name());
    n->set_op(node->op());
    for (const NodeOut& in : node->inputs()) {
      n->add_input(in.index == 0 ? in.node->name()
                                 : StrCat(in.node->name(), ":", in.index));
    }
    for (const Node* c : node->control_inputs()) {
      n->add_input(StrCat("^", c->name()));
    }
    n->set_device(node->assigned_device().empty() ? node->requested_device()
                                                  : node->assigned_device());
    auto& attrs = *n->mutable_attr();
    for (const auto& [name, value] : node->attrs()) {
      attrs[name] = ToTensorBoard(value);
    }
    tensorboard::AttrValue shapes;
    for (const TensorSpec& out : node->outputs()) {
      ShapeToTensorBoard(out.shape, shapes.mutable_list()->add_shape());
    }
    attrs["_output_shapes"] = std::move(shapes);
  }
  def.mutable_versions()->set_producer(1);
  return def;
}

tensorboard::HistogramProto MakeHistogram(const std::vector<double>& values) {
  tensorboard::HistogramProto h;
  double lo = 0, hi = 0, n = 0, sum = 0, squares = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = n == 0 ? v : std::min(lo, v);
    hi = n == 0 ? v : std::max(hi, v);
    n += 1;
    sum += v;
    squares += v * v;
  }
  h.set_num(n);
  if (n == 0) return h;
  h.set_min(lo);
  h.set_max(hi);
  h.set_sum(sum);
  h.set_sum_squares(squares);
  const int buckets = lo == hi ? 1 : 30;
  const double width = (hi - lo) / buckets;
  std::vector<double> counts(buckets, 0.0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    // Bucket i holds (lo + i * width, lo + (i + 1) * width]; lo in the first.
    int i = width > 0 ? static_cast<int>(std::ceil((v - lo) / width)) - 1 : 0;
    counts[std::clamp(i, 0, buckets - 1)] += 1;
  }
  for (int i = 0; i < buckets; ++i) {
    h.add_bucket_limit(i + 1 == buckets ? hi : lo + (i + 1) * width);
    h.add_bucket(counts[i]);
  }
  return h;
}

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(
    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        StrCat("--logdir: cannot make ", dir, ": ", ec.message()));
  }
  char host[256] = "localhost";
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof(host) - 1] = '\0';
  const std::string path =
      StrCat(dir, "/events.out.tfevents.", static_cast<int64_t>(WallTime()),
             ".", host, ".", static_cast<int64_t>(getpid()), ".runnel");
  std::FILE* file = std::fopen(path.c_str(), "ab");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        StrCat("--logdir: cannot write ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EventWriter> writer(new EventWriter(file, path));
  tensorboard::Event first;
  first.set_file_version("brain.Event:2");
  RN_RETURN_IF_ERROR(writer->Write(first));
  return writer;
}

EventWriter::~EventWriter() { std::fclose(file_); }

absl::Status EventWriter::AddScalar(const std::string& tag, int64_t step,
                                    double value) {
  tensorboard::Event event;
  event.set_step(step);
  tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  return Write(event);
}

absl::Status EventWriter::AddHistogram(const std::string& tag, int64_t step,
                                       const std::vector<double>& values) {
  tensorboard::HistogramProto histogram = MakeHistogram(values);
  if (histogram.num() == 0) return absl::OkStatus();
  tensorboard::Event event;
  event.set_step(step);
  tensorboard::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  *v->mutable_histo() = std::move(histogram);
  return Write(event);
}

absl::Status EventWriter::AddGraph(const Graph& graph, int64_t step) {
  tensorboard::Event event;
  event.set_step(step);
  event.set_graph_def(ToTensorBoardGraph(graph).SerializeAsString());
  return Write(event);
}

absl::Status EventWriter::Write(tensorboard::Event& event) {
  event.set_wall_time(WallTime());
  const std::string record = FrameRecord(event.SerializeAsString());
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    return absl::InternalError(StrCat("cannot write the event file ", path_,
                                      ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace runnel
