// The text builtins of docs/language.md §6 (Text): records of a file, words,
// a vocabulary and word ids, for models of text such as
// examples/fortune_topics.rnl. They run on the host, as the script runs:
// tokenising in interpreted loops would be far too slow.
//
// The tokenisation rule is one function, Words(), so `words`, `vocabulary`
// and `encode` cannot disagree: ASCII letters are lower-cased and a word is
// a maximal run of ASCII letters and digits; every other byte (space,
// punctuation, any byte of a non-ASCII character) separates words.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/builtins.h"
#include "interpreter/diag.h"

namespace runnel::interp {
namespace {

using Result = absl::StatusOr<Value>;

bool IsWordByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

// The words of `text`, lower-cased, in order.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (IsWordByte(c)) {
      word += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
  });
}

Value StringList(const std::vector<std::string>& strings) {
  std::vector<Value> items;
  items.reserve(strings.size());
  for (const std::string& s : strings) items.push_back(Value::String(s));
  return Value::List(std::move(items));
}

// Argument `i`: a list or tuple of strings.
absl::StatusOr<std::vector<std::string>> StringsArg(const CallArgs& a, int i) {
  const std::string what = ParamName(a, i);
  if (!a[i].is_sequence()) {
    return ErrorAt(
        a.span_of(i),
        StrCat(what, " must be a list of strings, got ", DescribeValue(a[i])));
  }
  std::vector<std::string> out;
  out.reserve(a[i].items().size());
  for (const Value& item : a[i].items()) {
    if (item.kind() != ValueKind::kString) {
      return ErrorAt(a.span_of(i),
                     StrCat(what, " must be a list of strings; item ",
                            out.size(), " is ", DescribeValue(item)));
    }
    out.push_back(item.str());
  }
  return out;
}

// load_records(path, sep = "%"): the records of a file, separated by lines
// that are exactly `sep` (a "\r" before the newline aside). A record's lines
// are joined by "\n"; blank records are left out.
Result LoadRecords(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::string path, StringArg(a, 0));
  RN_ASSIGN_OR_RETURN(std::string sep, StringArg(a, 1));
  if (sep.find('\n') != std::string::npos) {
    return ErrorAt(a.span_of(1),
                   "load_records: 'sep' is one line; it cannot hold a newline");
  }
  absl::StatusOr<std::string> text = ReadFileToString(path);
  RN_RETURN_IF_ERROR(CheckFile(a, text.status()));
  std::vector<std::string> records;
  std::string record;
  auto close = [&] {
    if (!record.empty() && record.back() == '\n') record.pop_back();
    if (!IsBlank(record)) records.push_back(record);
    record.clear();
  };
  std::string_view rest = *text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view()
                                         : rest.substr(end + 1);
    std::string_view bare = line;
    if (!bare.empty() && bare.back() == '\r') bare.remove_suffix(1);
    if (bare == sep) {
      close();
    } else {
      record.append(line);
      record += '\n';
    }
  }
  close();
  return StringList(records);
}

Result WordsFn(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::string text, StringArg(a, 0));
  return StringList(Words(text));
}

// vocabulary(texts, min_count = 1): every word of `texts` seen at least
// `min_count` times, the most frequent first, ties in byte order.
Result Vocabulary(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::vector<std::string> texts, StringsArg(a, 0));
  RN_ASSIGN_OR_RETURN(int64_t min_count, IntArg(a, 1));
  if (min_count < 1) {
    return ErrorAt(
        a.span_of(1),
        StrCat("vocabulary: 'min_count' must be at least 1, got ", min_count));
  }
  absl::flat_hash_map<std::string, int64_t> counts;
  for (const std::string& t : texts) {
    for (std::string& w : Words(t)) ++counts[std::move(w)];
  }
  std::vector<std::pair<int64_t, std::string>> kept;
  for (auto& [word, n] : counts) {
    if (n >= min_count) kept.emplace_back(-n, word);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<std::string> words;
  words.reserve(kept.size());
  for (auto& [_, w] : kept) words.push_back(std::move(w));
  return StringList(words);
}

// encode(texts, vocab, length = 0): {ids: i32[n, L], lengths: i32[n]}. Row
// i holds the positions in `vocab` of text i's words that `vocab` has, in
// order (other words are skipped), cut to L words, then zeros; lengths[i]
// counts its real ids. L is `length`, or with 0 the longest row.
Result Encode(Interpreter& in, CallArgs& a) {
  RN_ASSIGN_OR_RETURN(std::vector<std::string> texts, StringsArg(a, 0));
  RN_ASSIGN_OR_RETURN(std::vector<std::string> vocab, StringsArg(a, 1));
  RN_ASSIGN_OR_RETURN(int64_t length, IntArg(a, 2));
  if (length < 0) {
    return ErrorAt(a.span_of(2),
                   StrCat("encode: 'length' must be 0 (the longest text) or "
                          "more, got ",
                          length));
  }
  if (vocab.size() > static_cast<size_t>(INT32_MAX)) {
    return ErrorAt(a.span_of(1), "encode: 'vocab' has too many words for i32");
  }
  absl::flat_hash_map<std::string_view, int32_t> id;
  for (size_t i = 0; i < vocab.size(); ++i) {
    if (!id.emplace(vocab[i], static_cast<int32_t>(i)).second) {
      return ErrorAt(a.span_of(1),
                     StrCat("encode: 'vocab' holds \"", vocab[i],
                            "\" twice (items ", id[vocab[i]], " and ", i, ")"));
    }
  }
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(texts.size());
  int64_t longest = 0;
  for (const std::string& t : texts) {
    std::vector<int32_t> row;
    for (const std::string& w : Words(t)) {
      auto it = id.find(w);
      if (it != id.end()) row.push_back(it->second);
    }
    if (length > 0 && static_cast<int64_t>(row.size()) > length) {
      row.resize(length);
    }
    longest = std::max<int64_t>(longest, row.size());
    rows.push_back(std::move(row));
  }
  const int64_t width = length > 0 ? length : longest;
  const int64_t n = static_cast<int64_t>(rows.size());
  Tensor ids(DType::kI32, Shape{n, width});
  Tensor lengths(DType::kI32, Shape{n});
  int32_t* out = ids.data<int32_t>();
  std::fill(out, out + n * width, 0);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(rows[i].begin(), rows[i].end(), out + i * width);
    lengths.data<int32_t>()[i] = static_cast<int32_t>(rows[i].size());
  }
  return Value::Record(
      {{"ids", Value::Concrete(ids)}, {"lengths", Value::Concrete(lengths)}});
}

}  // namespace

void AddTextBuiltins(std::vector<Builtin>& b) {
  b.push_back({"load_records",
               {BuiltinParam("path"), BuiltinParam("sep", Value::String("%"))},
               LoadRecords});
  b.push_back({"words", {BuiltinParam("text")}, WordsFn});
  b.push_back(
      {"vocabulary",
       {BuiltinParam("texts"), BuiltinParam("min_count", Value::Int(1))},
       Vocabulary});
  b.push_back({"encode",
               {BuiltinParam("texts"), BuiltinParam("vocab"),
                BuiltinParam("length", Value::Int(0))},
               Encode});
}

}  // namespace runnel::interp
