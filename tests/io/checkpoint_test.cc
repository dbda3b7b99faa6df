// Checkpoint tests: the file format (round trips of every dtype and shape,
// the documented byte layout), every way a file can be bad (each leaving
// the variables unchanged), restore into a fresh session, and atomic saves
// that fail midway.
#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "base/strings.h"
#include "common_runtime/saver.h"
#include "common_runtime/session.h"
#include "tests/util/test_util.h"

namespace runnel {
namespace {

namespace fs = std::filesystem;
using ::runnel::testing::ExpectTensor;
using ::runnel::testing::F32;
using ::runnel::testing::F64;
using ::runnel::testing::I64;

using ::runnel::testing::Message;

// A fresh directory under the test's temporary directory, removed after.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::path(::testing::TempDir()) / "ckpt.XXXXXX");
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    path_ = mkdtemp(name.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, ec);
    fs::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const {
    return (fs::path(path_) / name).string();
  }
  const std::string& path() const { return path_; }
  // The names of the directory's entries, sorted.
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string path_;
};

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint32_t U32At(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= uint32_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
  return v;
}
uint64_t U64At(const std::string& b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t{static_cast<unsigned char>(b[at + i])} << (8 * i);
  return v;
}

// Where each tensor's data lies, read from the index as docs/checkpoints.md
// describes it: name -> (offset, size).
std::map<std::string, std::pair<uint64_t, uint64_t>> DataRanges(
    const std::string& b) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  const uint32_t count = U32At(b, 12);
  size_t at = 40;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t len = U32At(b, at);
    std::string name = b.substr(at + 4, len);
    at += 4 + len + 4;
    const uint32_t rank = U32At(b, at);
    at += 4 + 8 * rank;
    out[name] = {U64At(b, at), U64At(b, at + 8)};
    at += 8 + 8 + 4;
  }
  return out;
}

// Deterministic bytes for any dtype (bools 0/1).
Tensor Pattern(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t(dtype, shape);
  auto* p = static_cast<unsigned char*>(t.raw_data());
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < t.bytes(); ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = dtype == DType::kBool ? (x >> 24) & 1
                                 : static_cast<unsigned char>(x >> 24);
  }
  return t;
}

void ExpectSameTensor(const Tensor& got, const Tensor& want,
                      const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.bytes(), want.bytes()) << what;
  if (want.bytes() > 0) {
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.bytes()), 0)
        << what;
  }
}

// ---- the format
// ---------------------------------------------------------------

TEST(CheckpointFormatTest, RoundTripsEveryDTypeAndShape) {
  TempDir dir;
  const std::vector<Shape> shapes = {
      Shape{},     Shape{0},       Shape{1},         Shape{7},
      Shape{2, 3}, Shape{2, 0, 4}, Shape{3, 1, 5, 2}};
  TensorMap tensors;
  uint32_t seed = 1;
  for (DType dtype : kAllDTypes) {
    for (size_t s = 0; s < shapes.size(); ++s) {
      tensors[StrCat("scope/", DTypeName(dtype), "_", s)] =
          Pattern(dtype, shapes[s], seed++);
    }
  }
  const std::string path = dir.File("all.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, tensors).ok());
  absl::StatusOr<TensorMap> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(back->contains(name)) << name;
    ExpectSameTensor(back->at(name), t, name);
  }
  // Every tensor's data starts on a 64-byte boundary.
  for (const auto& [name, range] : DataRanges(ReadBytes(path))) {
    EXPECT_EQ(range.first % 64, 0u) << name;
  }
  // The same values give the same bytes.
  const std::string again = dir.File("again.ckpt");
  ASSERT_TRUE(WriteCheckpoint(again, tensors).ok());
  EXPECT_EQ(ReadBytes(path), ReadBytes(again));
}

TEST(CheckpointFormatTest, EmptyCheckpoint) {
  TempDir dir;
  const std::string path = dir.File("empty.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, {}).ok());
  EXPECT_EQ(ReadBytes(path).size(), 40u);
  absl::StatusOr<TensorMap> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->empty());
}

// The byte layout of docs/checkpoints.md, field by field.
TEST(CheckpointFormatTest, LayoutMatchesTheDocs) {
  TempDir dir;
  const std::string path = dir.File("w.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, {{"w", F32({1.0f, -2.0f}, {2})}}).ok());
  const std::string b = ReadBytes(path);
  // Header: magic, version, count, index size, file size, CRCs.
  EXPECT_EQ(b.substr(0, 8), std::string("\x89RNLCKPT", 8));
  EXPECT_EQ(U32At(b, 8), 1u);
  EXPECT_EQ(U32At(b, 12), 1u);
  const uint64_t index_size = 4 + 1 + 4 + 4 + 8 + 8 + 8 + 4;
  EXPECT_EQ(U64At(b, 16), index_size);
  EXPECT_EQ(U64At(b, 24), 136u);  // data at 128 (81 rounded up), 8 bytes
  EXPECT_EQ(b.size(), 136u);
  // Index entry: name, dtype code 3 (f32), rank 1, dim 2, offset, size.
  EXPECT_EQ(U32At(b, 40), 1u);
  EXPECT_EQ(b[44], 'w');
  EXPECT_EQ(U32At(b, 45), 3u);
  EXPECT_EQ(U32At(b, 49), 1u);
  EXPECT_EQ(U64At(b, 53), 2u);
  EXPECT_EQ(U64At(b, 61), 128u);
  EXPECT_EQ(U64At(b, 69), 8u);
  // Padding is zeros; data is little-endian IEEE floats.
  EXPECT_EQ(b.substr(81, 128 - 81), std::string(128 - 81, '\0'));
  EXPECT_EQ(U32At(b, 128), 0x3f800000u);  // 1.0f
  EXPECT_EQ(U32At(b, 132), 0xc0000000u);  // -2.0f
}

// ---- a session with variables -----------------------------------------------

// A graph of variables with constant initializers, and a session over it.
class Model {
 public:
  Model() : graph_(std::make_shared<Graph>()) {}

  Node* AddVar(const std::string& name, Tensor init) {
    Node* c = *graph_->AddConst(init, name + "/initial_value");
    NodeSpec spec;
    spec.name = name;
    spec.op = "variable";
    spec.attrs = {{"dtype", init.dtype()},
                  {"shape", init.shape()},
                  {"initializer", c->name() + ":0"}};
    absl::StatusOr<Node*> n = graph_->AddNode(std::move(spec));
    EXPECT_TRUE(n.ok()) << n.status();
    return *n;
  }
  Session& session() {
    if (!session_) {
      session_ =
          std::make_unique<Session>(graph_, SessionOptions{.num_threads = 2});
    }
    return *session_;
  }
  // The variable's value, read by a run (so initialised on first use).
  Tensor Value(const std::string& name) {
    auto out = session().Run({}, {name}, {});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : Tensor();
  }
  void Set(const std::string& name, Tensor value) {
    auto var = session().VariableFor(*graph_->FindNode(name));
    ASSERT_TRUE(var.ok());
    ASSERT_TRUE((*var)->Assign(std::move(value)).ok());
  }
  bool Initialized(const std::string& name) {
    auto var = session().resources()->Lookup<Variable>(name);
    return var != nullptr && var->initialized();
  }

 private:
  std::shared_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
};

// w f32[2,3], b f32[3], global_step i64[].
void AddStandardVars(Model& m) {
  m.AddVar("dense/w", F32({0, 0, 0, 0, 0, 0}, {2, 3}));
  m.AddVar("dense/b", F32({0, 0, 0}, {3}));
  m.AddVar("global_step", I64({0}, {}));
}

// Values A (saved) and B (current when a restore fails).
void SetValuesA(Model& m) {
  m.Set("dense/w", F32({1, 2, 3, 4, 5, 6}, {2, 3}));
  m.Set("dense/b", F32({0.5, -0.5, 0.25}, {3}));
  m.Set("global_step", I64({1234567890123}, {}));
}
void SetValuesB(Model& m) {
  m.Set("dense/w", F32({9, 9, 9, 9, 9, 9}, {2, 3}));
  m.Set("dense/b", F32({7, 7, 7}, {3}));
  m.Set("global_step", I64({42}, {}));
}
void ExpectValuesA(Model& m) {
  ExpectTensor(m.Value("dense/w"), DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}, 0);
  ExpectTensor(m.Value("dense/b"), DType::kF32, {3}, {0.5, -0.5, 0.25}, 0);
  Tensor step = m.Value("global_step");
  ASSERT_EQ(step.dtype(), DType::kI64);
  EXPECT_EQ(step.at<int64_t>(0), 1234567890123);
}
void ExpectValuesB(Model& m) {
  ExpectTensor(m.Value("dense/w"), DType::kF32, {2, 3}, {9, 9, 9, 9, 9, 9}, 0);
  ExpectTensor(m.Value("dense/b"), DType::kF32, {3}, {7, 7, 7}, 0);
  Tensor step = m.Value("global_step");
  ASSERT_EQ(step.dtype(), DType::kI64);
  EXPECT_EQ(step.at<int64_t>(0), 42);
}

TEST(CheckpointSessionTest, SaveAndRestoreIntoAFreshSession) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  {
    Model m;
    AddStandardVars(m);
    SetValuesA(m);
    ASSERT_TRUE(SaveVariables(m.session(), path).ok());
  }
  // A new graph and session, as in a new process: no variable has been
  // initialised, and the restored values must survive the first run.
  Model fresh;
  AddStandardVars(fresh);
  EXPECT_FALSE(fresh.Initialized("dense/w"));
  std::vector<std::string> extra;
  ASSERT_TRUE(RestoreVariables(fresh.session(), path, nullptr, &extra).ok());
  EXPECT_TRUE(extra.empty());
  EXPECT_TRUE(fresh.Initialized("dense/w"));
  ExpectValuesA(fresh);
}

TEST(CheckpointSessionTest, RestoreOverwritesValuesOfEveryDType) {
  TempDir dir;
  const std::string path = dir.File("all.ckpt");
  Model m;
  uint32_t seed = 7;
  std::map<std::string, Tensor> saved;
  for (DType dtype : kAllDTypes) {
    const std::string name = StrCat("v_", DTypeName(dtype));
    m.AddVar(name, Pattern(dtype, Shape{2, 2}, seed++));
    saved[name] = Pattern(dtype, Shape{2, 2}, seed++);
    m.Set(name, saved[name]);
  }
  m.AddVar("scalar", F64({2.5}, {}));
  m.AddVar("empty", F32({}, {0, 3}));
  ASSERT_TRUE(SaveVariables(m.session(), path).ok());
  for (DType dtype : kAllDTypes) {
    m.Set(StrCat("v_", DTypeName(dtype)), Pattern(dtype, Shape{2, 2}, 999));
  }
  ASSERT_TRUE(RestoreVariables(m.session(), path).ok());
  for (const auto& [name, t] : saved) ExpectSameTensor(m.Value(name), t, name);
  ExpectTensor(m.Value("scalar"), DType::kF64, {}, {2.5}, 0);
  ExpectTensor(m.Value("empty"), DType::kF32, {0, 3}, {}, 0);
}

TEST(CheckpointSessionTest, SaveInitialisesVariablesFirst) {
  TempDir dir;
  const std::string path = dir.File("init.ckpt");
  Model m;
  m.AddVar("w", F32({3, 4}, {2}));
  EXPECT_FALSE(m.Initialized("w"));
  ASSERT_TRUE(SaveVariables(m.session(), path).ok());
  EXPECT_TRUE(m.Initialized("w"));
  absl::StatusOr<TensorMap> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensor(back->at("w"), DType::kF32, {2}, {3, 4}, 0);
}

TEST(CheckpointSessionTest, ExtraTensorsInTheFileAreIgnored) {
  TempDir dir;
  const std::string path = dir.File("extra.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, {{"w", F32({5, 6}, {2})},
                                     {"old/unused", F32({1}, {1})}})
                  .ok());
  Model m;
  m.AddVar("w", F32({0, 0}, {2}));
  std::vector<std::string> extra;
  ASSERT_TRUE(RestoreVariables(m.session(), path, nullptr, &extra).ok());
  EXPECT_EQ(extra, std::vector<std::string>{"old/unused"});
  ExpectTensor(m.Value("w"), DType::kF32, {2}, {5, 6}, 0);
}

// ---- bad files change nothing
// ---------------------------------------------------

// Saves values A, sets values B, lets `damage` spoil the file, restores,
// and checks the error names the file and `names`, and that B stays.
void ExpectRestoreFails(
    const std::function<void(const std::string& path)>& damage,
    const std::vector<std::string>& names, absl::StatusCode code,
    const std::string& what) {
  SCOPED_TRACE(what);
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  Model m;
  AddStandardVars(m);
  SetValuesA(m);
  ASSERT_TRUE(SaveVariables(m.session(), path).ok());
  SetValuesB(m);
  damage(path);
  absl::Status s = RestoreVariables(m.session(), path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(Message(s).find(path), std::string::npos) << s;
  EXPECT_NE(Message(s).find(what), std::string::npos) << s;
  for (const std::string& n : names) {
    EXPECT_NE(Message(s).find(StrCat("'", n, "'")), std::string::npos) << s;
  }
  ExpectValuesB(m);
}

void FlipByte(const std::string& path, size_t at) {
  std::string b = ReadBytes(path);
  ASSERT_LT(at, b.size());
  b[at] ^= 0x10;
  WriteBytes(path, b);
}

TEST(CheckpointErrorsTest, CorruptDataNamesTheTensor) {
  ExpectRestoreFails(
      [](const std::string& path) {
        auto ranges = DataRanges(ReadBytes(path));
        FlipByte(path, ranges.at("dense/w").first + 5);
      },
      {"dense/w"}, absl::StatusCode::kDataLoss,
      "is corrupt: tensor 'dense/w' fails its checksum");
  ExpectRestoreFails(
      [](const std::string& path) {
        auto ranges = DataRanges(ReadBytes(path));
        FlipByte(path, ranges.at("dense/b").first);
        FlipByte(path, ranges.at("global_step").first + 7);
      },
      {"dense/b", "global_step"}, absl::StatusCode::kDataLoss,
      "fail their checksums");
}

TEST(CheckpointErrorsTest, CorruptHeaderOrIndex) {
  ExpectRestoreFails([](const std::string& p) { FlipByte(p, 0); }, {},
                     absl::StatusCode::kDataLoss, "is not a Runnel checkpoint");
  // Each header field: version, count, index size, file size, CRCs.
  for (size_t at : {8, 12, 16, 24, 32, 36}) {
    ExpectRestoreFails([at](const std::string& p) { FlipByte(p, at); }, {},
                       absl::StatusCode::kDataLoss,
                       "is corrupt: its header fails its checksum");
  }
  // A name, a dtype code and a data offset in the index.
  for (size_t at : {45, 52, 60}) {
    ExpectRestoreFails([at](const std::string& p) { FlipByte(p, at); }, {},
                       absl::StatusCode::kDataLoss,
                       "is corrupt: its index fails its checksum");
  }
}

TEST(CheckpointErrorsTest, TruncatedAtManyLengths) {
  TempDir dir;
  Model m;
  AddStandardVars(m);
  SetValuesA(m);
  const std::string good = dir.File("good.ckpt");
  ASSERT_TRUE(SaveVariables(m.session(), good).ok());
  const std::string whole = ReadBytes(good);
  auto ranges = DataRanges(whole);
  const size_t index_end = 40 + U64At(whole, 16);
  for (size_t len :
       {size_t{0}, size_t{4}, size_t{8}, size_t{39}, size_t{40}, size_t{60},
        index_end, size_t{ranges.at("dense/b").first},
        size_t{ranges.at("dense/w").first + 3}, whole.size() - 1}) {
    ExpectRestoreFails(
        [&](const std::string& p) { WriteBytes(p, whole.substr(0, len)); }, {},
        absl::StatusCode::kDataLoss, "is truncated");
  }
}

TEST(CheckpointErrorsTest, TrailingBytesAndOtherVersions) {
  ExpectRestoreFails(
      [](const std::string& p) { WriteBytes(p, ReadBytes(p) + "junk"); }, {},
      absl::StatusCode::kDataLoss, "but its header says");
  // A well-formed header of format version 2.
  ExpectRestoreFails(
      [](const std::string& p) {
        std::string b = ReadBytes(p);
        b[8] = 2;
        const uint32_t crc = static_cast<uint32_t>(
            crc32(0, reinterpret_cast<const Bytef*>(b.data()), 36));
        for (int i = 0; i < 4; ++i)
          b[36 + i] = static_cast<char>(crc >> (8 * i));
        WriteBytes(p, b);
      },
      {}, absl::StatusCode::kUnimplemented, "has format version 2");
}

TEST(CheckpointErrorsTest, MissingFileOrDirectory) {
  TempDir dir;
  Model m;
  AddStandardVars(m);
  SetValuesB(m);
  absl::Status s = RestoreVariables(m.session(), dir.File("none.ckpt"));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Message(s),
            StrCat("cannot open checkpoint '", dir.File("none.ckpt"),
                   "': No such file or directory"));
  s = RestoreVariables(m.session(), dir.path());
  EXPECT_EQ(Message(s), StrCat("cannot read checkpoint '", dir.path(),
                               "': it is a directory"));
  ExpectValuesB(m);
}

// Saves from one model and restores into another, whose variables keep B.
void ExpectMismatch(const std::function<void(Model&)>& other_vars,
                    const std::string& want_message,
                    const std::vector<std::string>& want_names) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  {
    Model m;
    AddStandardVars(m);
    SetValuesA(m);
    ASSERT_TRUE(SaveVariables(m.session(), path).ok());
  }
  Model other;
  other_vars(other);
  other.Set("dense/b", F32({7, 7, 7}, {3}));
  std::vector<CheckpointMismatch> mismatches;
  absl::Status s = RestoreVariables(other.session(), path, &mismatches);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(s),
            StrCat("checkpoint '", path,
                   "' does not match the variables: ", want_message));
  std::vector<std::string> names;
  for (const auto& mm : mismatches) names.push_back(mm.variable->name());
  EXPECT_EQ(names, want_names);
  // Nothing was restored, not even the variables that matched.
  ExpectTensor(other.Value("dense/b"), DType::kF32, {3}, {7, 7, 7}, 0);
}

TEST(CheckpointErrorsTest, MissingName) {
  ExpectMismatch(
      [](Model& m) {
        AddStandardVars(m);
        m.AddVar("dense/gamma", F32({1, 1, 1}, {3}));
      },
      "'dense/gamma' (f32[3]) is not in the checkpoint", {"dense/gamma"});
}

TEST(CheckpointErrorsTest, ShapeMismatch) {
  ExpectMismatch(
      [](Model& m) {
        m.AddVar("dense/w", F32({0, 0, 0, 0, 0, 0}, {3, 2}));
        m.AddVar("dense/b", F32({0, 0, 0}, {3}));
        m.AddVar("global_step", I64({0}, {}));
      },
      "'dense/w' is f32[3,2] but the checkpoint has f32[2,3]", {"dense/w"});
}

TEST(CheckpointErrorsTest, DTypeMismatchAndMissingTogether) {
  ExpectMismatch(
      [](Model& m) {
        m.AddVar("dense/w", F32({0, 0, 0, 0, 0, 0}, {2, 3}));
        m.AddVar("dense/b", F32({0, 0, 0}, {3}));
        m.AddVar("global_step", F64({0}, {}));
        m.AddVar("z", I64({0}, {}));
      },
      "'global_step' is f64[] but the checkpoint has i64[]; 'z' (i64[]) is "
      "not in the checkpoint",
      {"global_step", "z"});
}

// ---- atomic saves
// -------------------------------------------------------------

// Saves a small checkpoint, then a save that fails; the first file must be
// intact and no temporary file left.
void ExpectFailedSaveKeepsOldFile(
    const std::function<absl::Status(const std::string& path)>& failing_save,
    const std::string& want_error) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, {{"w", F32({1, 2}, {2})}}).ok());
  const std::string before = ReadBytes(path);
  absl::Status s = failing_save(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(Message(s).find(StrCat("cannot write checkpoint '", path, "'")),
            std::string::npos)
      << s;
  EXPECT_NE(Message(s).find(want_error), std::string::npos) << s;
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"model.ckpt"});
  absl::StatusOr<TensorMap> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensor(back->at("w"), DType::kF32, {2}, {1, 2}, 0);
}

TEST(CheckpointAtomicTest, WriteFailingMidwayKeepsTheOldFile) {
  // A file size limit makes write() fail part of the way through the
  // 400 KB tensor, as a full disk would.
  ExpectFailedSaveKeepsOldFile(
      [](const std::string& path) {
        Model m;
        m.AddVar("big", Pattern(DType::kF32, Shape{100000}, 3));
        m.AddVar("small", F32({1}, {1}));
        struct rlimit old;
        getrlimit(RLIMIT_FSIZE, &old);
        struct rlimit limited = old;
        limited.rlim_cur = 64 * 1024;
        auto old_handler = signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &limited);
        absl::Status s = SaveVariables(m.session(), path);
        setrlimit(RLIMIT_FSIZE, &old);
        signal(SIGXFSZ, old_handler);
        return s;
      },
      "write failed: File too large");
}

TEST(CheckpointAtomicTest, RenameFailingKeepsNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  fs::create_directory(path);
  fs::create_directory(fs::path(path) / "child");  // rename cannot replace it
  absl::Status s = WriteCheckpoint(path, {{"w", F32({1}, {1})}});
  EXPECT_NE(Message(s).find("cannot rename the temporary file over it"),
            std::string::npos)
      << s;
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"model.ckpt"});
  EXPECT_TRUE(fs::is_directory(fs::path(path) / "child"));
}

TEST(CheckpointAtomicTest, MissingDirectory) {
  TempDir dir;
  const std::string path = dir.File("no/model.ckpt");
  absl::Status s = WriteCheckpoint(path, {{"w", F32({1}, {1})}});
  EXPECT_EQ(Message(s), StrCat("cannot write checkpoint '", path,
                               "': cannot create a temporary file in '",
                               dir.File("no"), "': No such file or directory"));
  EXPECT_TRUE(dir.Entries().empty());
}

TEST(CheckpointAtomicTest, ATensorWithoutValueWritesNothing) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  absl::Status s = WriteCheckpoint(path, {{"x", Tensor()}});
  EXPECT_EQ(Message(s), StrCat("cannot write checkpoint '", path,
                               "': tensor 'x' has no value"));
  EXPECT_TRUE(dir.Entries().empty());
}

// The message of WriteCheckpoint(path, ...) run as a user without write
// permission: root ignores permission bits, so as root (CI) the write runs
// in a child process that first drops to the unprivileged user `nobody`.
std::string WriteWithoutPrivileges(const std::string& path,
                                   const Tensor& value) {
  if (geteuid() != 0) return Message(WriteCheckpoint(path, {{"w", value}}));
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string m = "could not drop privileges";
    if (setgid(65534) == 0 && setuid(65534) == 0) {
      m = Message(WriteCheckpoint(path, {{"w", value}}));
    }
    (void)!write(fds[1], m.data(), m.size());
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) {
    message.append(buf, n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  return message;
}

TEST(CheckpointAtomicTest, UnwritableDirectory) {
  TempDir dir;
  const std::string path = dir.File("model.ckpt");
  ASSERT_TRUE(WriteCheckpoint(path, {{"w", F32({1, 2}, {2})}}).ok());
  const std::string before = ReadBytes(path);
  const auto read_only = fs::perms::owner_read | fs::perms::owner_exec |
                         fs::perms::group_read | fs::perms::group_exec |
                         fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir.path(), read_only);
  const std::string message = WriteWithoutPrivileges(path, F32({3, 4}, {2}));
  fs::permissions(dir.path(), fs::perms::owner_all);
  EXPECT_NE(message.find("Permission denied"), std::string::npos) << message;
  EXPECT_EQ(ReadBytes(path), before);
  EXPECT_EQ(dir.Entries(), std::vector<std::string>{"model.ckpt"});
}

}  // namespace
}  // namespace runnel
