#include "cli/lsp/server.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "base/executable_path.h"
#include "base/strings.h"
#include "cli/def_help.h"
#include "cli/lsp/analysis.h"
#include "cli/lsp/document.h"
#include "cli/lsp/json_rpc.h"
#include "cli/op_catalog.h"
#include "framework/dtype.h"
#include "interpreter/builtins.h"
#include "interpreter/interpreter.h"
#include "interpreter/large_stack.h"
#include "lang/keywords.h"
#include "nlohmann/json.hpp"

namespace runnel::lsp {
namespace {

using json = nlohmann::json;

// JSON-RPC and LSP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

// An error that becomes the response to the request being answered.
struct RequestError : std::runtime_error {
  RequestError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
  int code;
};

// ---- URIs ------------------------------------------------------------------

std::string UriToPath(const std::string& uri) {
  if (uri.rfind("file://", 0) != 0) {
    throw RequestError(kInvalidParams, "only file:// URIs are served: " + uri);
  }
  std::string path;
  for (size_t i = 7; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() &&
        std::isxdigit(static_cast<unsigned char>(uri[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(uri[i + 2]))) {
      path += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      path += uri[i];
    }
  }
  return path;
}

std::string PathToUri(const std::string& path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) ||
        std::string_view("/-._~").find(c) != std::string_view::npos) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri;
}

json ToJson(Position p) {
  return {{"line", p.line}, {"character", p.character}};
}

// ---- the session
// -------------------------------------------------------------

// One analysed version of a document.
struct Snapshot {
  int serial = 0;                       // Open::serial of the text analysed
  std::shared_ptr<const Document> doc;  // that text
  std::unique_ptr<const Analysis> analysis;
};

struct Open {
  std::string uri;
  std::string path;
  int version = 0;  // the client's
  int serial = 0;   // ours: counts the changes
  std::unique_ptr<Document> doc;
  // The newest analysis taken from the worker, and the edits made since the
  // text it analysed (each with the serial it made).
  std::shared_ptr<const Snapshot> analysed;
  std::vector<std::pair<int, Edit>> edits;
};

// A text to analyse (the worker's queue holds the newest of each document).
struct Job {
  std::string uri, path;
  int serial = 0, version = 0;
  std::shared_ptr<const Document> doc;
};

class Server {
 public:
  Server(std::FILE* in, std::FILE* out, const ServerOptions& options)
      : in_(in), out_(out), options_(options) {
    // A checker process that dies while we write to it must not end us.
    std::signal(SIGPIPE, SIG_IGN);
    checker_ = ExecutablePath();
    worker_ = std::make_unique<interp::LargeStackThread>([this] { Work(); });
  }
  ~Server() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    CancelChecks();   // a check under way ends now
    worker_.reset();  // joins
  }

  int Run() {
    while (true) {
      ReadResult r = ReadMessage(in_);
      if (r.kind == ReadResult::Kind::kEnd) return shutdown_ ? 0 : 1;
      if (r.kind == ReadResult::Kind::kBadHeader) {
        Log("skipped a message: " + r.error);
        continue;
      }
      json message = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
      if (message.is_discarded() || !message.is_object()) {
        SendError(nullptr, kParseError, "the message is not a JSON object");
        continue;
      }
      Dispatch(message);
      if (exit_) return shutdown_ ? 0 : 1;
    }
  }

 private:
  // ---- plumbing
  // --------------------------------------------------------------

  void Log(const std::string& text) {
    std::fprintf(stderr, "runnel lsp: %s\n", text.c_str());
  }
  void Send(const json& message) {
    const std::string text =
        message.dump(-1, ' ', false, json::error_handler_t::replace);
    std::lock_guard<std::mutex> lock(out_mu_);
    WriteMessage(out_, text);
  }
  void SendError(const json& id, int code, const std::string& message) {
    Send({{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", code}, {"message", message}}}});
  }
  void Notify(const std::string& method, json params) {
    Send({{"jsonrpc", "2.0"},
          {"method", method},
          {"params", std::move(params)}});
  }

  void Dispatch(const json& m) {
    const bool is_request = m.contains("id");
    const json id = is_request ? m["id"] : json();
    if (!m.contains("method") || !m["method"].is_string()) {
      if (is_request && !m.contains("result") && !m.contains("error")) {
        SendError(id, kInvalidRequest, "a request without a method");
      }
      return;  // a response to something we never ask
    }
    const std::string method = m["method"];
    const json params = m.value("params", json::object());
    const auto start = std::chrono::steady_clock::now();
    try {
      if (!initialized_ && method != "initialize" && method != "exit") {
        if (is_request) {
          throw RequestError(kServerNotInitialized,
                             "the server is not initialized yet");
        }
        return;
      }
      if (shutdown_ && method != "exit" && is_request) {
        throw RequestError(kInvalidRequest, "the server is shut down");
      }
      json result = Handle(method, params, is_request);
      if (is_request) {
        Send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
      }
    } catch (const RequestError& e) {
      if (is_request)
        SendError(id, e.code, e.what());
      else
        Log(method + ": " + e.what());
    } catch (const json::exception& e) {
      if (is_request)
        SendError(id, kInvalidParams, method + ": " + e.what());
      else
        Log(method + ": " + e.what());
    } catch (const std::exception& e) {
      if (is_request)
        SendError(id, kInternalError, method + ": " + e.what());
      else
        Log(method + ": internal error: " + e.what());
    }
    if (options_.log_timing) {
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      Log(StrCat(method, " ", ms, " ms"));
    }
  }

  json Handle(const std::string& method, const json& params, bool request) {
    if (method == "initialize") return Initialize(params);
    if (method == "initialized") return nullptr;
    if (method == "shutdown") {
      shutdown_ = true;
      return nullptr;
    }
    if (method == "exit") {
      exit_ = true;
      return nullptr;
    }
    if (method == "textDocument/didOpen") return DidOpen(params);
    if (method == "textDocument/didChange") return DidChange(params);
    if (method == "textDocument/didClose") return DidClose(params);
    if (method == "textDocument/didSave") return nullptr;
    if (method == "textDocument/hover") return Hover(params);
    if (method == "textDocument/definition") return Definition(params);
    if (method == "textDocument/references") return References(params);
    if (method == "textDocument/completion") return Completion(params);
    if (method == "textDocument/signatureHelp") return SignatureHelp(params);
    if (method == "textDocument/documentSymbol") return DocumentSymbols(params);
    if (method == "textDocument/semanticTokens/full")
      return SemanticTokens(params);
    if (request) throw RequestError(kMethodNotFound, "no method " + method);
    return nullptr;  // notifications we do not need ($/cancelRequest, ...)
  }

  // ---- lifecycle
  // -------------------------------------------------------------

  json Initialize(const json& params) {
    initialized_ = true;
    // UTF-8 positions when the client offers them (LSP 3.17), else UTF-16.
    const json* encodings = nullptr;
    if (params.contains("capabilities") &&
        params["capabilities"].contains("general") &&
        params["capabilities"]["general"].contains("positionEncodings")) {
      encodings = &params["capabilities"]["general"]["positionEncodings"];
    }
    if (encodings != nullptr && encodings->is_array()) {
      for (const json& e : *encodings) utf8_ = utf8_ || e == "utf-8";
    }
    json legend = {
        {"tokenTypes",
         {"namespace", "function", "variable", "parameter", "property",
          "type"}},
        {"tokenModifiers", {"declaration", "readonly", "defaultLibrary"}}};
    return {{"capabilities",
             {{"positionEncoding", utf8_ ? "utf-8" : "utf-16"},
              {"textDocumentSync",
               {{"openClose", true}, {"change", 2}, {"save", false}}},
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"referencesProvider", true},
              {"completionProvider",
               {{"triggerCharacters", {".", "(", ","}},
                {"resolveProvider", false}}},
              {"signatureHelpProvider", {{"triggerCharacters", {"(", ","}}}},
              {"documentSymbolProvider", true},
              {"semanticTokensProvider",
               {{"legend", legend}, {"full", true}, {"range", false}}}}},
            {"serverInfo", {{"name", "runnel"}, {"version", "1"}}}};
  }

  // ---- documents
  // -------------------------------------------------------------

  Open& Find(const json& params) {
    const std::string uri = params.at("textDocument").at("uri");
    auto it = open_.find(uri);
    if (it == open_.end()) {
      throw RequestError(kInvalidParams, "the document is not open: " + uri);
    }
    return it->second;
  }

  // ---- the worker: analyses texts in the background -------------------------
  //
  // A change only queues the new text; the worker parses and checks it
  // (about 0.4 s for 5,000 lines here) and publishes its diagnostics, unless
  // a newer text of the document is queued by then. Requests that need the
  // current text analysed wait for it (Fresh); hover, completion and
  // signature help answer at once from the newest analysis, with positions
  // mapped through the edits made since (Stale).

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !queued_.empty(); });
      if (stop_) return;
      Job job = std::move(queued_.begin()->second);
      queued_.erase(queued_.begin());
      lock.unlock();
      auto snap = std::make_shared<Snapshot>();
      snap->serial = job.serial;
      snap->doc = job.doc;
      snap->analysis = AnalyzeSafely(job);
      json diags = Diagnostics(job.uri, job.path, *job.doc, *snap->analysis);
      lock.lock();
      if (!closed_.contains(job.uri)) {
        finished_[job.uri] = snap;
        if (!queued_.contains(job.uri)) {
          Notify("textDocument/publishDiagnostics", {{"uri", job.uri},
                                                     {"version", job.version},
                                                     {"diagnostics", diags}});
        }
      }
      cv_.notify_all();
    }
  }

  std::unique_ptr<const Analysis> AnalyzeSafely(const Job& job) {
    try {
      std::unique_ptr<Analysis> a =
          Analyze(job.path, job.doc->text(),
                  {.stdlib_dir = options_.stdlib_dir,
                   .check = true,
                   .checker = checker_,
                   .check_timeout_s = options_.check_timeout_s});
      if (options_.log_timing) {
        Log(StrCat("analysed ", job.path, ": parse ", a->parse_ms,
                   " ms, check ", a->check_ms, " ms"));
      }
      return a;
    } catch (const std::exception& e) {
      // A bug here: say so, and keep what the parse alone gives.
      Log(StrCat("internal error analysing ", job.path, ": ", e.what()));
      std::unique_ptr<Analysis> a = Analyze(job.path, job.doc->text(),
                                            {.stdlib_dir = options_.stdlib_dir,
                                             .check = false,
                                             .checker = "",
                                             .check_timeout_s = 0});
      lang::Diagnostic d;
      d.message = StrCat("internal error in the language server: ", e.what());
      a->diagnostics.push_back(std::move(d));
      return a;
    }
  }

  void Enqueue(const Open& o) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_.erase(o.uri);
    queued_[o.uri] = Job{.uri = o.uri,
                         .path = o.path,
                         .serial = o.serial,
                         .version = o.version,
                         .doc = std::make_shared<const Document>(*o.doc)};
    cv_.notify_all();
  }

  // Takes the newest analysis the worker finished for `o`. Holds mu_.
  void TakeLocked(Open& o) {
    auto it = finished_.find(o.uri);
    if (it == finished_.end()) return;
    if (o.analysed != nullptr && it->second->serial <= o.analysed->serial) {
      return;
    }
    o.analysed = it->second;
    const int serial = o.analysed->serial;
    std::erase_if(o.edits, [&](const auto& e) { return e.first <= serial; });
  }

  // The analysis of the document's current text, waiting for the worker.
  std::shared_ptr<const Snapshot> Fresh(Open& o) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      auto it = finished_.find(o.uri);
      return it != finished_.end() && it->second->serial == o.serial;
    });
    TakeLocked(o);
    return o.analysed;
  }

  // The newest analysis at once, and where byte `offset` of the current
  // text was in the text it analysed; the current text's (Fresh) when there
  // is none yet or the offset is in text typed since. With `near`, an
  // offset in typed text is moved back to the start of its line, or of an
  // earlier one, until it is in text the analysis saw (completion: the
  // names in scope there are those of the cursor).
  std::pair<std::shared_ptr<const Snapshot>, size_t> Stale(Open& o,
                                                           size_t offset,
                                                           bool near = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      TakeLocked(o);
    }
    if (o.analysed != nullptr) {
      const std::vector<Edit> edits = EditsSince(o);
      size_t at = offset;
      for (int tries = 0; tries < 64; ++tries) {
        if (std::optional<size_t> old = MapBack(edits, at)) {
          return {o.analysed, *old};
        }
        if (!near) break;
        const auto [line, col] = o.doc->LineColAt(at);
        if (col > 1) {
          at = o.doc->OffsetOf(line, 1);
        } else if (line > 1) {
          at = o.doc->OffsetOf(line - 1, 1);
        } else {
          break;
        }
      }
    }
    return {Fresh(o), offset};
  }

  static std::vector<Edit> EditsSince(const Open& o) {
    std::vector<Edit> edits;
    for (const auto& [serial, e] : o.edits) edits.push_back(e);
    return edits;
  }

  const Analysis& Analyzed(Open& o) { return *Fresh(o)->analysis; }

  json DidOpen(const json& params) {
    const json& td = params.at("textDocument");
    const std::string uri = td.at("uri");
    Open o;
    o.uri = uri;
    o.path = UriToPath(uri);
    o.version = td.value("version", 0);
    o.doc = std::make_unique<Document>(td.at("text").get<std::string>(), utf8_);
    auto old = open_.find(uri);
    if (old != open_.end()) o.serial = old->second.serial + 1;
    open_[uri] = std::move(o);
    Enqueue(open_[uri]);
    return nullptr;
  }

  json DidChange(const json& params) {
    Open& o = Find(params);
    o.version = params.at("textDocument").value("version", o.version);
    for (const json& c : params.at("contentChanges")) {
      ++o.serial;
      if (c.contains("range")) {
        const json& r = c["range"];
        o.edits.emplace_back(
            o.serial,
            o.doc->Replace(PositionOf(r.at("start")), PositionOf(r.at("end")),
                           c.at("text").get<std::string>()));
      } else {
        const size_t before = o.doc->text().size();
        o.doc->SetText(c.at("text").get<std::string>());
        o.edits.emplace_back(o.serial, Edit{.start = 0,
                                            .removed = before,
                                            .inserted = o.doc->text().size()});
      }
    }
    Enqueue(o);
    return nullptr;
  }

  json DidClose(const json& params) {
    const std::string uri = params.at("textDocument").at("uri");
    open_.erase(uri);
    std::lock_guard<std::mutex> lock(mu_);
    queued_.erase(uri);
    finished_.erase(uri);
    closed_.insert(uri);
    Notify("textDocument/publishDiagnostics",
           {{"uri", uri}, {"diagnostics", json::array()}});
    return nullptr;
  }

  static Position PositionOf(const json& p) {
    return {.line = p.at("line").get<int>(),
            .character = p.at("character").get<int>()};
  }

  json Range(const Document& doc, const SourceSpan& s) const {
    return {{"start", ToJson(doc.At(s.line, s.col))},
            {"end", ToJson(doc.At(s.end_line, s.end_col + 1))}};
  }
  // A range in another file, which is read for the purpose.
  json RangeIn(const std::string& path, const SourceSpan& s) const {
    absl::StatusOr<std::shared_ptr<lang::SourceFile>> src =
        lang::SourceFile::Read(path);
    Document doc(src.ok() ? (*src)->text() : std::string(), utf8_);
    return Range(doc, s);
  }
  // `s` in `path`: in the document (`uri`, `doc_path`, `doc`), or in
  // another file.
  json Location(const std::string& uri, const std::string& doc_path,
                const Document& doc, const std::string& path,
                const SourceSpan& s) const {
    if (path == doc_path) return {{"uri", uri}, {"range", Range(doc, s)}};
    return {{"uri", PathToUri(path)}, {"range", RangeIn(path, s)}};
  }
  json Location(const Open& o, const std::string& path, const SourceSpan& s) {
    return Location(o.uri, o.path, *o.doc, path, s);
  }

  // The range of `span` of snapshot `s` in the current text of `o`; null
  // when the edits since took it away.
  json RangeNow(const Open& o, const Snapshot& s, const SourceSpan& span) {
    if (s.serial == o.serial) return Range(*o.doc, span);
    const std::vector<Edit> edits = EditsSince(o);
    std::optional<size_t> start =
        MapForward(edits, s.doc->OffsetOf(span.line, span.col));
    std::optional<size_t> last =
        MapForward(edits, s.doc->OffsetOf(span.end_line, span.end_col));
    if (!start || !last) return nullptr;
    auto [l0, c0] = o.doc->LineColAt(*start);
    auto [l1, c1] = o.doc->LineColAt(*last);
    return {{"start", ToJson(o.doc->At(l0, c0))},
            {"end", ToJson(o.doc->At(l1, c1 + 1))}};
  }

  json Diagnostics(const std::string& uri, const std::string& path,
                   const Document& doc, const Analysis& a) const {
    json diags = json::array();
    for (const lang::Diagnostic& d : a.diagnostics) {
      json item;
      std::string message = d.message;
      if (d.span.known() && d.span.file.str() == path) {
        item["range"] = Range(doc, d.span);
      } else {
        // An error without a place, or in an imported file: on line 1,
        // saying where.
        item["range"] = {{"start", {{"line", 0}, {"character", 0}}},
                         {"end", {{"line", 0}, {"character", 0}}}};
        if (d.span.known()) message = StrCat(d.span.ToString(), ": ", message);
      }
      item["severity"] = d.severity == lang::Severity::kError     ? 1
                         : d.severity == lang::Severity::kWarning ? 2
                                                                  : 3;
      item["source"] = "runnel";
      item["message"] = message;
      json related = json::array();
      for (const lang::Diagnostic& n : d.notes) {
        if (!n.span.known()) {
          item["message"] =
              StrCat(item["message"].get<std::string>(), "\n", n.message);
          continue;
        }
        related.push_back(
            {{"location", Location(uri, path, doc, n.span.file.str(), n.span)},
             {"message", n.message}});
      }
      if (!related.empty()) item["relatedInformation"] = std::move(related);
      diags.push_back(std::move(item));
    }
    return diags;
  }

  // ---- hover
  // -----------------------------------------------------------------

  static std::string Code(const std::string& text) {
    return StrCat("```runnel\n", text, "\n```");
  }

  // "def f(a, b = 1)" and the doc comment, from the file's text.
  static std::string DefDoc(const std::string& text, const std::string& name,
                            const std::string& path) {
    std::optional<std::string> help = cli::DefHelp(text, name, path);
    if (!help) return "";
    const size_t nl = help->find('\n');
    std::string out = Code(help->substr(0, nl));
    std::string rest;
    size_t at = help->find('\n', nl + 1);  // past the "(file:line)" line
    while (at != std::string::npos && at + 1 < help->size()) {
      const size_t end = help->find('\n', at + 1);
      std::string line = help->substr(
          at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
      if (line.rfind("  ", 0) == 0) line.erase(0, 2);
      rest += line + "\n";
      at = end;
    }
    if (!rest.empty()) out += "\n\n" + rest;
    return out;
  }

  std::string SymbolHover(const Analysis& a, const Symbol& s,
                          const SourceSpan& at) {
    if (s.kind == SymbolKind::kDef) {
      std::string doc = DefDoc(a.source->text(), s.name, a.path);
      if (!doc.empty()) return doc;
      return Code(
          StrCat("def ", s.name, "(", absl::StrJoin(s.params, ", "), ")"));
    }
    if (s.kind == SymbolKind::kImport) {
      return StrCat(
          Code(StrCat("import ", s.module.empty() ? s.name : s.module)), "\n\n",
          s.import_path);
    }
    std::string type = s.type;
    if (const Typed* t = a.TypeAt(at.line, at.col);
        t != nullptr && t->span.line == at.line && t->span.col == at.col &&
        t->span.end_line == at.end_line && t->span.end_col == at.end_col) {
      type = t->type;  // the value at this use (a loop's state may differ)
    }
    std::string text = StrCat(SymbolKindName(s.kind), " ", s.name);
    if (!type.empty()) text += StrCat(": ", type);
    if (!s.extra.empty()) text += StrCat(" (", s.extra, ")");
    if (type.empty() && !a.checked) {
      return Code(text) + "\n\n(no type: the file has syntax errors)";
    }
    return Code(text);
  }

  std::string ExternalHover(const Analysis& a, const External& e) {
    if (e.import >= 0) {
      const Symbol& m = a.symbols[e.import];
      const std::string member = e.name.substr(e.name.find('.') + 1);
      const ModuleFile* file = modules_.Get(m.import_path);
      if (file == nullptr) return Code(e.name);
      std::string doc = DefDoc(file->source->text(), member, m.import_path);
      if (!doc.empty()) return doc;
      for (const ModuleMember& mm : file->members) {
        if (mm.name == member) {
          return Code(StrCat(SymbolKindName(mm.kind), " ", e.name));
        }
      }
      return Code(e.name);
    }
    if (std::optional<DType> d = DTypeFromName(e.name)) {
      return Code(StrCat("dtype ", e.name));
    }
    std::optional<std::string> help = cli::HelpText(e.name);
    if (!help) return Code(e.name);
    const size_t nl = help->find('\n');
    std::string out = Code(help->substr(0, nl));
    if (nl != std::string::npos) out += "\n\n" + help->substr(nl + 1);
    return out;
  }

  json Hover(const json& params) {
    Open& o = Find(params);
    const auto [snap, offset] =
        Stale(o, o.doc->Offset(PositionOf(params.at("position"))));
    const Analysis& a = *snap->analysis;
    const auto [line, col] = snap->doc->LineColAt(offset);
    std::string text;
    SourceSpan span;
    if (int s = a.SymbolAt(line, col, &span); s >= 0) {
      text = SymbolHover(a, a.symbols[s], span);
    } else if (const External* e = a.ExternalAt(line, col)) {
      span = e->span;
      text = ExternalHover(a, *e);
    } else if (const Typed* t = a.TypeAt(line, col)) {
      span = t->span;
      text = Code(t->type);
    } else {
      return nullptr;
    }
    if (snap->serial != o.serial) {
      text +=
          "\n\n*(as checked before the latest change, which is being "
          "checked)*";
    }
    json result = {{"contents", {{"kind", "markdown"}, {"value", text}}}};
    if (json range = RangeNow(o, *snap, span); !range.is_null()) {
      result["range"] = std::move(range);
    }
    return result;
  }

  // ---- definition and references
  // ----------------------------------------------

  json Definition(const json& params) {
    Open& o = Find(params);
    const Analysis& a = Analyzed(o);
    const auto [line, col] = o.doc->LineCol(PositionOf(params.at("position")));
    if (int s = a.SymbolAt(line, col); s >= 0) {
      const Symbol& sym = a.symbols[s];
      // On an import's own name: the module's file.
      if (sym.kind == SymbolKind::kImport &&
          Contains(sym.name_span, line, col) && !sym.import_path.empty()) {
        return Location(
            o, sym.import_path,
            SourceSpan{
                .file = {}, .line = 1, .col = 1, .end_line = 1, .end_col = 0});
      }
      return Location(o, o.path, sym.name_span);
    }
    if (const External* e = a.ExternalAt(line, col);
        e != nullptr && e->import >= 0) {
      const Symbol& m = a.symbols[e->import];
      const std::string member = e->name.substr(e->name.find('.') + 1);
      if (const ModuleFile* file = modules_.Get(m.import_path)) {
        for (const ModuleMember& mm : file->members) {
          if (mm.name != member) continue;
          const Document text(file->source->text(), utf8_);
          return {{"uri", PathToUri(m.import_path)},
                  {"range", Range(text, mm.name_span)}};
        }
      }
    }
    return nullptr;
  }

  json References(const json& params) {
    Open& o = Find(params);
    const Analysis& a = Analyzed(o);
    const auto [line, col] = o.doc->LineCol(PositionOf(params.at("position")));
    const int s = a.SymbolAt(line, col);
    json out = json::array();
    if (s < 0) {
      // A builtin or a module's member: its every use in the document.
      if (const External* e = a.ExternalAt(line, col)) {
        for (const External& other : a.externals) {
          if (other.name == e->name && other.import == e->import) {
            out.push_back(Location(o, o.path, other.span));
          }
        }
      }
      return out;
    }
    const bool declaration =
        params.contains("context") &&
        params["context"].value("includeDeclaration", false);
    if (declaration) out.push_back(Location(o, o.path, a.symbols[s].name_span));
    for (const Reference& r : a.refs) {
      if (r.symbol == s) out.push_back(Location(o, o.path, r.span));
    }
    return out;
  }

  // ---- calls being written
  // -----------------------------------------------------

  struct CallContext {
    std::string callee;              // "nn.dense", "f"
    int argument = 0;                // the index of the argument at the cursor
    std::vector<std::string> named;  // names given as `name =` already
  };

  // The call whose parentheses hold byte `offset` of the text, read back
  // from there (the file may not parse while it is being written).
  static std::optional<CallContext> CallAt(const std::string& text,
                                           size_t offset) {
    CallContext c;
    int depth = 0;
    size_t i = std::min(offset, text.size());
    std::string word;  // the identifier just before a '=' at depth 0
    while (i > 0) {
      const char ch = text[--i];
      if (ch == ')' || ch == ']' || ch == '}') {
        ++depth;
      } else if (ch == '[' || ch == '{') {
        if (depth == 0) return std::nullopt;
        --depth;
      } else if (ch == '(') {
        if (depth > 0) {
          --depth;
          continue;
        }
        size_t end = i;
        while (end > 0 && text[end - 1] == ' ') --end;
        size_t start = end;
        while (start > 0 &&
               (std::isalnum(static_cast<unsigned char>(text[start - 1])) ||
                text[start - 1] == '_' || text[start - 1] == '.')) {
          --start;
        }
        if (start == end) return std::nullopt;
        c.callee = text.substr(start, end - start);
        if (lang::kKeywords.end() != std::find(lang::kKeywords.begin(),
                                               lang::kKeywords.end(),
                                               c.callee)) {
          return std::nullopt;  // `if (`, `while (`
        }
        std::reverse(c.named.begin(), c.named.end());
        return c;
      } else if (depth == 0 && ch == ',') {
        ++c.argument;
      } else if (depth == 0 && ch == '=' && i + 1 < text.size() &&
                 text[i + 1] != '=' &&
                 (i == 0 || std::string_view("=!<>").find(text[i - 1]) ==
                                std::string_view::npos)) {
        size_t end = i;
        while (end > 0 && text[end - 1] == ' ') --end;
        size_t start = end;
        while (start > 0 &&
               (std::isalnum(static_cast<unsigned char>(text[start - 1])) ||
                text[start - 1] == '_')) {
          --start;
        }
        if (start < end) c.named.push_back(text.substr(start, end - start));
      } else if (depth == 0 && ch == '\n' && i > 0 && text[i - 1] == '\n') {
        return std::nullopt;  // a blank line: not inside a call
      }
    }
    return std::nullopt;
  }

  struct Signature {
    std::string name;
    std::vector<std::string> params;  // "act = none"
    std::vector<std::string> names;   // "act"
    std::string doc;
  };

  // The parameters of what `callee` names at the cursor: a def of the
  // document, a module's function, or a builtin.
  std::optional<Signature> SignatureOf(const Analysis& a, const Document& doc,
                                       const std::string& callee, int line,
                                       int col) {
    Signature sig;
    sig.name = callee;
    const size_t dot = callee.find('.');
    if (dot != std::string::npos) {
      const std::string module = callee.substr(0, dot);
      const std::string member = callee.substr(dot + 1);
      for (int s : a.VisibleAt(line, col)) {
        const Symbol& m = a.symbols[s];
        if (m.name != module || m.kind != SymbolKind::kImport) continue;
        const ModuleFile* file = modules_.Get(m.import_path);
        if (file == nullptr) return std::nullopt;
        for (const lang::StmtPtr& st : file->parsed.program->stmts) {
          if (st->kind != lang::StmtKind::kDef) continue;
          const auto& d = static_cast<const lang::DefStmt&>(*st);
          if (d.name != member) continue;
          FillParams(d.params, file->source->text(), &sig);
          sig.doc = DefDoc(file->source->text(), member, m.import_path);
          return sig;
        }
        return std::nullopt;
      }
      return std::nullopt;
    }
    for (int s : a.VisibleAt(line, col)) {
      const Symbol& sym = a.symbols[s];
      if (sym.name != callee) continue;
      if (sym.def == nullptr) {
        if (sym.params.empty()) return std::nullopt;
        sig.params = sig.names = sym.params;
        return sig;
      }
      FillParams(sym.def->params, doc.text(), &sig);
      sig.doc = DefDoc(doc.text(), callee, a.path);
      return sig;
    }
    for (const interp::Builtin& b : interp::Builtins()) {
      if (b.name != callee) continue;
      for (const interp::BuiltinParam& p : b.params) {
        sig.names.push_back(p.name);
        sig.params.push_back(
            p.required ? p.name
                       : StrCat(p.name, " = ",
                                interp::FormatValue(p.default_value, true)));
      }
      if (b.variadic) sig.params.push_back("...");
      if (std::optional<std::string> help = cli::HelpText(callee)) {
        const size_t nl = help->find('\n');
        if (nl != std::string::npos) sig.doc = help->substr(nl + 1);
      }
      return sig;
    }
    return std::nullopt;
  }

  // Each parameter as written: "act = none".
  static void FillParams(const std::vector<lang::Param>& params,
                         const std::string& text, Signature* sig) {
    lang::SourceFile file("", text);
    for (const lang::Param& p : params) {
      sig->names.push_back(p.name);
      std::string shown = p.name;
      if (p.default_value &&
          p.default_value->span.line == p.default_value->span.end_line) {
        const SourceSpan& d = p.default_value->span;
        std::string_view line = file.Line(d.line);
        if (d.end_col <= static_cast<int>(line.size())) {
          shown = StrCat(p.name, " = ",
                         line.substr(d.col - 1, d.end_col - d.col + 1));
        }
      }
      sig->params.push_back(shown);
    }
  }

  json SignatureHelp(const json& params) {
    Open& o = Find(params);
    const Position pos = PositionOf(params.at("position"));
    const size_t offset = o.doc->Offset(pos);
    std::optional<CallContext> call = CallAt(o.doc->text(), offset);
    if (!call) return nullptr;
    const auto [snap, old] = Stale(o, offset, /*near=*/true);
    const auto [line, col] = snap->doc->LineColAt(old);
    std::optional<Signature> sig =
        SignatureOf(*snap->analysis, *snap->doc, call->callee, line, col);
    if (!sig) return nullptr;
    std::string label = sig->name + "(";
    json ps = json::array();
    for (size_t i = 0; i < sig->params.size(); ++i) {
      if (i > 0) label += ", ";
      const int start = static_cast<int>(label.size());
      label += sig->params[i];
      ps.push_back({{"label", {start, static_cast<int>(label.size())}}});
    }
    label += ")";
    int active = call->argument;
    // Past `name =`: that parameter.
    if (!call->named.empty()) {
      auto it =
          std::find(sig->names.begin(), sig->names.end(), call->named.back());
      if (it != sig->names.end())
        active = static_cast<int>(it - sig->names.begin());
    }
    json s = {{"label", label}, {"parameters", ps}};
    if (!sig->doc.empty())
      s["documentation"] = {{"kind", "markdown"}, {"value", sig->doc}};
    return {{"signatures", {s}},
            {"activeSignature", 0},
            {"activeParameter", active}};
  }

  // ---- completion
  // ---------------------------------------------------------------

  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }

  json Completion(const json& params) {
    Open& o = Find(params);
    const Position pos = PositionOf(params.at("position"));
    const size_t offset = o.doc->Offset(pos);
    const std::string& text = o.doc->text();
    size_t start = offset;
    while (start > 0 && IsWordChar(text[start - 1])) --start;
    const std::string prefix = text.substr(start, offset - start);
    const auto [snap, old] = Stale(o, offset, /*near=*/true);
    const Analysis& a = *snap->analysis;
    const auto [line, col] = snap->doc->LineColAt(old);
    json items = json::array();
    absl::flat_hash_set<std::string> seen;
    auto add = [&](const std::string& label, int kind,
                   const std::string& detail, const std::string& insert = "") {
      if (label.rfind(prefix, 0) != 0 || !seen.insert(label).second) return;
      json item = {{"label", label}, {"kind", kind}};
      if (!detail.empty()) item["detail"] = detail;
      if (!insert.empty()) item["insertText"] = insert;
      items.push_back(std::move(item));
    };
    // `module.`: the module's public members only.
    if (start > 0 && text[start - 1] == '.') {
      size_t m = start - 1;
      while (m > 0 && IsWordChar(text[m - 1])) --m;
      const std::string module = text.substr(m, start - 1 - m);
      for (int s : a.VisibleAt(line, col)) {
        const Symbol& sym = a.symbols[s];
        if (sym.name != module || sym.kind != SymbolKind::kImport) continue;
        const ModuleFile* file = modules_.Get(sym.import_path);
        if (file == nullptr) break;
        for (const ModuleMember& mm : file->members) {
          const bool fn = mm.kind == SymbolKind::kDef || !mm.params.empty();
          add(mm.name, fn ? 3 : 6,
              fn ? StrCat(mm.name, "(", absl::StrJoin(mm.params, ", "), ")")
                 : SymbolKindName(mm.kind));
        }
        break;
      }
      return {{"isIncomplete", false}, {"items", items}};
    }
    // The keyword arguments of the call being written, not given yet.
    if (std::optional<CallContext> call = CallAt(text, start)) {
      if (std::optional<Signature> sig =
              SignatureOf(a, *snap->doc, call->callee, line, col)) {
        for (size_t i = 0; i < sig->names.size(); ++i) {
          if (static_cast<int>(i) <
              call->argument - static_cast<int>(call->named.size())) {
            continue;  // given by position
          }
          if (std::find(call->named.begin(), call->named.end(),
                        sig->names[i]) != call->named.end()) {
            continue;
          }
          add(sig->names[i], 5,
              StrCat("argument of ", sig->name, ": ", sig->params[i]),
              sig->names[i] + " = ");
        }
      }
    }
    for (int s : a.VisibleAt(line, col)) {
      const Symbol& sym = a.symbols[s];
      std::string detail = SymbolKindName(sym.kind);
      if (!sym.type.empty()) detail += StrCat(" ", sym.type);
      const int kind = sym.kind == SymbolKind::kDef      ? 3
                       : sym.kind == SymbolKind::kImport ? 9
                                                         : 6;
      add(sym.name, kind, detail);
    }
    for (std::string_view k : lang::kKeywords)
      add(std::string(k), 14, "keyword");
    for (DType d : kAllDTypes) add(std::string(DTypeName(d)), 25, "dtype");
    for (const interp::Builtin& b : interp::Builtins()) {
      std::vector<std::string> ps;
      for (const auto& p : b.params) ps.push_back(p.name);
      add(b.name, 3,
          StrCat("builtin ", b.name, "(", absl::StrJoin(ps, ", "), ")"));
    }
    return {{"isIncomplete", false}, {"items", items}};
  }

  // ---- outline and colours
  // ------------------------------------------------------

  static int LspSymbolKind(SymbolKind k) {
    switch (k) {
      case SymbolKind::kInput:
        return 7;  // Property
      case SymbolKind::kVar:
      case SymbolKind::kState:
        return 13;  // Variable
      case SymbolKind::kLet:
        return 14;  // Constant
      case SymbolKind::kDef:
        return 12;  // Function
      case SymbolKind::kScope:
        return 3;  // Namespace
      case SymbolKind::kImport:
        return 2;  // Module
      default:
        return 13;
    }
  }

  json DocumentSymbols(const json& params) {
    Open& o = Find(params);
    const Analysis& a = Analyzed(o);
    // Inputs, vars, functions, scopes and imports at any depth outside
    // functions; lets at the top and in scopes.
    std::vector<int> shown(a.symbols.size(), 0);
    auto in_def = [&](int i) {
      for (int p = a.symbols[i].parent; p >= 0; p = a.symbols[p].parent) {
        if (a.symbols[p].kind == SymbolKind::kDef) return true;
      }
      return false;
    };
    for (size_t i = 0; i < a.symbols.size(); ++i) {
      const Symbol& s = a.symbols[i];
      if (s.kind == SymbolKind::kParam || s.kind == SymbolKind::kLoop) continue;
      if (s.kind == SymbolKind::kLet && !s.top_level) continue;
      if (in_def(static_cast<int>(i))) continue;
      shown[i] = 1;
    }
    std::vector<json> nodes(a.symbols.size());
    for (size_t i = 0; i < a.symbols.size(); ++i) {
      if (!shown[i]) continue;
      const Symbol& s = a.symbols[i];
      std::string detail = s.type;
      if (s.kind == SymbolKind::kDef) {
        detail = StrCat("(", absl::StrJoin(s.params, ", "), ")");
      } else if (s.kind != SymbolKind::kScope) {
        detail =
            StrCat(SymbolKindName(s.kind), s.type.empty() ? "" : " ", s.type);
      }
      nodes[i] = {{"name", s.name.empty() ? "?" : s.name},
                  {"detail", detail},
                  {"kind", LspSymbolKind(s.kind)},
                  {"range", Range(*o.doc, s.full)},
                  {"selectionRange", Range(*o.doc, s.name_span)},
                  {"children", json::array()}};
    }
    // Children before parents are attached: walk from the end.
    json roots = json::array();
    for (int i = static_cast<int>(a.symbols.size()) - 1; i >= 0; --i) {
      if (!shown[i]) continue;
      const int p = a.symbols[i].parent;
      if (p >= 0 && shown[p]) {
        nodes[p]["children"].insert(nodes[p]["children"].begin(),
                                    std::move(nodes[i]));
      } else {
        roots.insert(roots.begin(), std::move(nodes[i]));
      }
    }
    return roots;
  }

  json SemanticTokens(const json& params) {
    Open& o = Find(params);
    const Analysis& a = Analyzed(o);
    enum Type {
      kNamespace,
      kFunction,
      kVariable,
      kParameter,
      kProperty,
      kTypeT
    };
    enum Mod { kDeclaration = 1, kReadonly = 2, kDefaultLibrary = 4 };
    struct Token {
      SourceSpan span;
      int type, mods;
    };
    std::vector<Token> tokens;
    auto of = [](SymbolKind k, int* type, int* mods) {
      *mods = 0;
      switch (k) {
        case SymbolKind::kImport:
          *type = kNamespace;
          break;
        case SymbolKind::kDef:
          *type = kFunction;
          break;
        case SymbolKind::kInput:
          *type = kParameter;
          *mods = kReadonly;
          break;
        case SymbolKind::kParam:
          *type = kParameter;
          break;
        case SymbolKind::kLet:
          *type = kVariable;
          *mods = kReadonly;
          break;
        default:
          *type = kVariable;
      }
    };
    for (const Symbol& s : a.symbols) {
      if (s.kind == SymbolKind::kScope || s.kind == SymbolKind::kImport)
        continue;
      int type, mods;
      of(s.kind, &type, &mods);
      tokens.push_back({s.name_span, type, mods | kDeclaration});
    }
    for (const Reference& r : a.refs) {
      int type, mods;
      of(a.symbols[r.symbol].kind, &type, &mods);
      tokens.push_back({r.span, type, mods});
    }
    for (const External& e : a.externals) {
      if (e.import >= 0) {
        tokens.push_back({e.span, kFunction, 0});
      } else if (DTypeFromName(e.name)) {
        tokens.push_back({e.span, kTypeT, kDefaultLibrary});
      } else {
        tokens.push_back({e.span, kFunction, kDefaultLibrary});
      }
    }
    std::sort(tokens.begin(), tokens.end(), [](const Token& x, const Token& y) {
      return std::tie(x.span.line, x.span.col) <
             std::tie(y.span.line, y.span.col);
    });
    json data = json::array();
    Position last;
    SourceSpan prev;
    for (const Token& t : tokens) {
      if (!t.span.known() || t.span.line != t.span.end_line) continue;
      if (prev.known() && prev.line == t.span.line &&
          t.span.col <= prev.end_col) {
        continue;  // overlapping (a name declared and used at one place)
      }
      const Position start = o.doc->At(t.span.line, t.span.col);
      const Position end = o.doc->At(t.span.end_line, t.span.end_col + 1);
      data.push_back(start.line - last.line);
      data.push_back(start.line == last.line ? start.character - last.character
                                             : start.character);
      data.push_back(end.character - start.character);
      data.push_back(t.type);
      data.push_back(t.mods);
      last = start;
      prev = t.span;
    }
    return {{"data", data}};
  }

  std::FILE* in_;
  std::FILE* out_;
  ServerOptions options_;
  bool utf8_ = false;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool exit_ = false;
  ModuleCache modules_;  // the reading thread's
  std::string checker_;  // this binary, run as the checker ("": in process)
  std::map<std::string, Open> open_;  // the reading thread's

  // Shared with the worker, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Job> queued_;
  std::map<std::string, std::shared_ptr<const Snapshot>> finished_;
  absl::flat_hash_set<std::string> closed_;
  bool stop_ = false;
  std::mutex out_mu_;  // one message at a time on out_
  std::unique_ptr<interp::LargeStackThread> worker_;
};

}  // namespace

int Serve(std::FILE* in, std::FILE* out, const ServerOptions& options) {
  return Server(in, out, options).Run();
}

}  // namespace runnel::lsp
