#include "cli/lsp/analysis.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "framework/dtype.h"
#include "interpreter/interpreter.h"

namespace runnel::lsp {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

bool Before(const SourceSpan& a, int line, int col) {
  return a.line < line || (a.line == line && a.col <= col);
}
bool After(const SourceSpan& a, int line, int col) {
  return a.end_line > line || (a.end_line == line && a.end_col >= col);
}

// How much smaller `a` is than `b`: fewer lines first, then fewer columns.
bool Narrower(const SourceSpan& a, const SourceSpan& b) {
  return std::make_pair(a.end_line - a.line, a.end_col - a.col) <
         std::make_pair(b.end_line - b.line, b.end_col - b.col);
}

std::vector<std::string> ParamNames(const std::vector<lang::Param>& params) {
  std::vector<std::string> names;
  for (const lang::Param& p : params) names.push_back(p.name);
  return names;
}

// ---- names: declarations and uses, by the language's scopes ----------------

class Walker {
 public:
  explicit Walker(Analysis* a) : a_(a) {
    for (const std::string& n : interp::Interpreter::BuiltinNames()) {
      builtins_.insert(n);
    }
    for (DType d : kAllDTypes) builtins_.insert(std::string(DTypeName(d)));
  }

  void Walk(const lang::Program& program, const std::string& stdlib_dir) {
    stdlib_dir_ = stdlib_dir;
    SourceSpan all{.file = FileName(a_->path),
                   .line = 1,
                   .col = 1,
                   .end_line = 1 << 30,
                   .end_col = 1 << 30};
    Push(all);
    for (const lang::StmtPtr& s : program.stmts) Stmt(*s);
    Pop();
  }

 private:
  struct Frame {
    SourceSpan block;
    std::vector<std::pair<std::string, int>> names;
    std::vector<std::function<void()>> deferred;
  };

  void Push(const SourceSpan& block) {
    auto frame = std::make_shared<Frame>();
    frame->block = block;
    frames_.push_back(std::move(frame));
  }
  // Walks the function bodies declared in the frame (they see every name
  // the frame binds, as a call does), then leaves it.
  void Pop() {
    std::shared_ptr<Frame> f = frames_.back();
    for (size_t i = 0; i < f->deferred.size(); ++i) f->deferred[i]();
    frames_.pop_back();
  }
  // Runs `fn` later, in the scopes and under the parent of now.
  void Defer(std::function<void()> fn) {
    auto frames = frames_;
    const int parent = parent_;
    frames_.back()->deferred.push_back(
        [this, frames = std::move(frames), parent, fn = std::move(fn)]() {
          auto saved = std::move(frames_);
          const int saved_parent = parent_;
          frames_ = frames;
          parent_ = parent;
          fn();
          frames_ = std::move(saved);
          parent_ = saved_parent;
        });
  }

  int Declare(const std::string& name, SymbolKind kind, const SourceSpan& at,
              const SourceSpan& full) {
    if (name.empty() || name == "_") return -1;
    Symbol s;
    s.name = name;
    s.kind = kind;
    s.name_span = at;
    s.full = full;
    const SourceSpan& block = frames_.back()->block;
    s.visible = SourceSpan{.file = at.file,
                           .line = at.line,
                           .col = at.col,
                           .end_line = block.end_line,
                           .end_col = block.end_col};
    s.parent = parent_;
    s.top_level = frames_.size() == 1;
    a_->symbols.push_back(std::move(s));
    const int index = static_cast<int>(a_->symbols.size()) - 1;
    frames_.back()->names.emplace_back(name, index);
    return index;
  }

  int Lookup(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
      for (auto n = (*f)->names.rbegin(); n != (*f)->names.rend(); ++n) {
        if (n->first == name) return n->second;
      }
    }
    return -1;
  }

  void Use(const std::string& name, const SourceSpan& span) {
    const int s = Lookup(name);
    if (s >= 0) {
      a_->refs.push_back({span, s});
    } else if (builtins_.contains(name)) {
      a_->externals.push_back(
          {.span = span, .name = name, .module = "", .import = -1});
    }
  }

  void Pattern(const lang::Pattern& p, SymbolKind kind,
               const SourceSpan& full) {
    switch (p.kind) {
      case lang::Pattern::Kind::kName:
        Declare(p.name, kind, p.span, full);
        break;
      case lang::Pattern::Kind::kDiscard:
        break;
      case lang::Pattern::Kind::kTuple:
        for (const lang::Pattern& e : p.elements) Pattern(e, kind, full);
        break;
    }
  }
  void Rebound(const lang::Pattern& p) {
    if (p.kind == lang::Pattern::Kind::kName) Use(p.name, p.span);
    for (const lang::Pattern& e : p.elements) Rebound(e);
  }

  void Type(const lang::TypeAnnotation& t) {
    // The dtype's name: a builtin, for hover and colours.
    if (!t.dtype.empty() && t.span.known()) {
      SourceSpan at = t.span;
      at.end_line = at.line;
      at.end_col = at.col + static_cast<int>(t.dtype.size()) - 1;
      a_->externals.push_back(
          {.span = at, .name = t.dtype, .module = "", .import = -1});
    }
    for (const lang::ExprPtr& d : t.dims) Expr(d.get());
  }

  void Block(const lang::Block& b) {
    Push(b.span);
    for (const lang::StmtPtr& s : b.stmts) Stmt(*s);
    Pop();
  }

  void Function(const std::vector<lang::Param>& params,
                const lang::Expr* body_expr,
                const std::optional<lang::Block>& body_block,
                const SourceSpan& span) {
    Push(body_block ? body_block->span : span);
    for (const lang::Param& p : params) {
      Expr(p.default_value.get());
      Declare(p.name, SymbolKind::kParam, p.span, p.span);
    }
    Expr(body_expr);
    if (body_block) {
      for (const lang::StmtPtr& s : body_block->stmts) Stmt(*s);
    }
    Pop();
  }

  void Stmt(const lang::Stmt& stmt) {
    using lang::StmtKind;
    switch (stmt.kind) {
      case StmtKind::kLet: {
        const auto& s = static_cast<const lang::LetStmt&>(stmt);
        Expr(s.value.get());
        const size_t first = a_->symbols.size();
        Pattern(s.pattern, SymbolKind::kLet, s.span);
        if (s.value && s.value->kind == lang::ExprKind::kLambda &&
            a_->symbols.size() == first + 1) {
          a_->symbols[first].params =
              ParamNames(static_cast<const lang::LambdaExpr&>(*s.value).params);
        }
        return;
      }
      case StmtKind::kVar: {
        const auto& s = static_cast<const lang::VarStmt&>(stmt);
        if (s.type) Type(*s.type);
        Expr(s.init.get());
        Declare(s.name, s.is_state ? SymbolKind::kState : SymbolKind::kVar,
                s.name_span, s.span);
        return;
      }
      case StmtKind::kInput: {
        const auto& s = static_cast<const lang::InputStmt&>(stmt);
        Type(s.type);
        Expr(s.default_value.get());
        Declare(s.name, SymbolKind::kInput, s.name_span, s.span);
        return;
      }
      case StmtKind::kDef: {
        const auto& s = static_cast<const lang::DefStmt&>(stmt);
        const int index =
            Declare(s.name, SymbolKind::kDef, s.name_span, s.span);
        if (index < 0) return;
        a_->symbols[index].def = &s;
        a_->symbols[index].params = ParamNames(s.params);
        Defer([this, &s, index] {
          parent_ = index;
          Function(s.params, s.body_expr.get(), s.body_block, s.span);
        });
        return;
      }
      case StmtKind::kImport: {
        const auto& s = static_cast<const lang::ImportStmt&>(stmt);
        const std::string alias = s.alias.empty() ? s.module : s.alias;
        // `import nn` and `import "f" as x` end with the name they bind.
        SourceSpan at = s.span;
        if (s.span.line == s.span.end_line) {
          at.col = std::max(
              s.span.col, s.span.end_col - static_cast<int>(alias.size()) + 1);
        }
        at.line = at.end_line = s.span.end_line;
        at.end_col = s.span.end_col;
        const int index = Declare(alias, SymbolKind::kImport, at, s.span);
        if (index >= 0) {
          a_->symbols[index].module = s.module;
          a_->symbols[index].import_path =
              ResolveImport(s, a_->path, stdlib_dir_);
        }
        return;
      }
      case StmtKind::kReturn:
        Expr(static_cast<const lang::ReturnStmt&>(stmt).value.get());
        return;
      case StmtKind::kBreak:
      case StmtKind::kContinue:
        return;
      case StmtKind::kFor: {
        const auto& s = static_cast<const lang::ForStmt&>(stmt);
        Expr(s.iterable.get());
        Push(s.span);
        Pattern(s.var, SymbolKind::kLoop, s.span);
        for (const lang::StmtPtr& b : s.body.stmts) Stmt(*b);
        Pop();
        return;
      }
      case StmtKind::kScope:
      case StmtKind::kDevice:
      case StmtKind::kAfter: {
        const auto& s = static_cast<const lang::AnnotateStmt&>(stmt);
        Expr(s.arg.get());
        const int saved = parent_;
        if (stmt.kind == StmtKind::kScope && s.arg &&
            s.arg->kind == lang::ExprKind::kString) {
          Symbol sym;
          sym.name = static_cast<const lang::StringExpr&>(*s.arg).value;
          sym.kind = SymbolKind::kScope;
          sym.name_span = s.arg->span;
          sym.full = s.span;
          sym.visible = s.span;
          sym.parent = parent_;
          a_->symbols.push_back(std::move(sym));
          parent_ = static_cast<int>(a_->symbols.size()) - 1;
        }
        // Names bound inside stay visible after the block.
        for (const lang::StmtPtr& b : s.body.stmts) Stmt(*b);
        parent_ = saved;
        return;
      }
      case StmtKind::kRebind: {
        const auto& s = static_cast<const lang::RebindStmt&>(stmt);
        Expr(s.value.get());
        Rebound(s.pattern);
        return;
      }
      case StmtKind::kExpr:
        Expr(static_cast<const lang::ExprStmt&>(stmt).expr.get());
        return;
    }
  }

  void Expr(const lang::Expr* e) {
    if (e == nullptr) return;
    using lang::ExprKind;
    switch (e->kind) {
      case ExprKind::kInt:
      case ExprKind::kFloat:
      case ExprKind::kString:
      case ExprKind::kBool:
      case ExprKind::kNone:
        return;
      case ExprKind::kName: {
        const auto& n = static_cast<const lang::NameExpr&>(*e);
        Use(n.name, n.span);
        return;
      }
      case ExprKind::kList:
      case ExprKind::kTuple:
        for (const auto& x :
             static_cast<const lang::SequenceExpr&>(*e).elements) {
          Expr(x.get());
        }
        return;
      case ExprKind::kRecord:
        for (const auto& f : static_cast<const lang::RecordExpr&>(*e).fields) {
          Expr(f.value.get());
        }
        return;
      case ExprKind::kUnary:
        Expr(static_cast<const lang::UnaryExpr&>(*e).operand.get());
        return;
      case ExprKind::kBinary: {
        const auto& b = static_cast<const lang::BinaryExpr&>(*e);
        Expr(b.lhs.get());
        Expr(b.rhs.get());
        return;
      }
      case ExprKind::kCall: {
        const auto& c = static_cast<const lang::CallExpr&>(*e);
        Expr(c.callee.get());
        for (const lang::Arg& a : c.args) Expr(a.value.get());
        return;
      }
      case ExprKind::kIndex: {
        const auto& x = static_cast<const lang::IndexExpr&>(*e);
        Expr(x.target.get());
        for (const lang::Subscript& s : x.subscripts) {
          Expr(s.index.get());
          Expr(s.lo.get());
          Expr(s.hi.get());
          Expr(s.step.get());
        }
        return;
      }
      case ExprKind::kMember: {
        const auto& m = static_cast<const lang::MemberExpr&>(*e);
        Expr(m.target.get());
        if (m.target && m.target->kind == ExprKind::kName) {
          const int s =
              Lookup(static_cast<const lang::NameExpr&>(*m.target).name);
          if (s >= 0 && a_->symbols[s].kind == SymbolKind::kImport) {
            SourceSpan at = m.span;
            at.line = m.span.end_line;
            at.col = std::max(
                1, m.span.end_col - static_cast<int>(m.name.size()) + 1);
            a_->externals.push_back(
                {.span = at,
                 .name = StrCat(a_->symbols[s].name, ".", m.name),
                 .module = a_->symbols[s].name,
                 .import = s});
          }
        }
        return;
      }
      case ExprKind::kIf: {
        const auto& i = static_cast<const lang::IfExpr&>(*e);
        Expr(i.cond.get());
        Block(i.then_block);
        if (i.else_block) Block(*i.else_block);
        Expr(i.else_if.get());
        return;
      }
      case ExprKind::kLoop: {
        const auto& l = static_cast<const lang::LoopExpr&>(*e);
        Expr(l.init.get());
        if (l.is_for) Expr(l.iterable.get());
        Expr(l.option_value.get());
        Push(l.span);
        Pattern(l.state, SymbolKind::kLoop, l.span);
        if (l.is_for) Pattern(l.var, SymbolKind::kLoop, l.span);
        Expr(l.cond.get());
        for (const lang::StmtPtr& s : l.body.stmts) Stmt(*s);
        Pop();
        return;
      }
      case ExprKind::kLambda: {
        const auto& l = static_cast<const lang::LambdaExpr&>(*e);
        Function(l.params, l.body_expr.get(), l.body_block, l.span);
        return;
      }
      case ExprKind::kRun: {
        const auto& r = static_cast<const lang::RunExpr&>(*e);
        Expr(r.fetches.get());
        Expr(r.feeds.get());
        return;
      }
      case ExprKind::kAssign: {
        const auto& a = static_cast<const lang::AssignExpr&>(*e);
        Expr(a.target.get());
        Expr(a.value.get());
        return;
      }
    }
  }

  Analysis* a_;
  std::string stdlib_dir_;
  absl::flat_hash_set<std::string> builtins_;
  std::vector<std::shared_ptr<Frame>> frames_;
  int parent_ = -1;
};

}  // namespace

const char* SymbolKindName(SymbolKind k) {
  switch (k) {
    case SymbolKind::kLet:
      return "let";
    case SymbolKind::kVar:
      return "var";
    case SymbolKind::kState:
      return "state";
    case SymbolKind::kInput:
      return "input";
    case SymbolKind::kParam:
      return "parameter";
    case SymbolKind::kDef:
      return "def";
    case SymbolKind::kImport:
      return "import";
    case SymbolKind::kLoop:
      return "loop variable";
    case SymbolKind::kScope:
      return "scope";
  }
  return "name";
}

bool Contains(const SourceSpan& s, int line, int col) {
  return s.known() && Before(s, line, col) && After(s, line, col);
}

int Analysis::SymbolAt(int line, int col, SourceSpan* span) const {
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i].kind != SymbolKind::kScope &&
        Contains(symbols[i].name_span, line, col)) {
      if (span != nullptr) *span = symbols[i].name_span;
      return static_cast<int>(i);
    }
  }
  for (const Reference& r : refs) {
    if (Contains(r.span, line, col)) {
      if (span != nullptr) *span = r.span;
      return r.symbol;
    }
  }
  return -1;
}

const External* Analysis::ExternalAt(int line, int col) const {
  for (const External& e : externals) {
    if (Contains(e.span, line, col)) return &e;
  }
  return nullptr;
}

const Typed* Analysis::TypeAt(int line, int col) const {
  const Typed* best = nullptr;
  for (const Typed& t : types) {
    if (t.span.line > line) break;
    if (Contains(t.span, line, col) &&
        (best == nullptr || Narrower(t.span, best->span))) {
      best = &t;
    }
  }
  return best;
}

std::vector<int> Analysis::VisibleAt(int line, int col) const {
  std::vector<int> out;
  absl::flat_hash_set<std::string> seen;
  // Later declarations shadow earlier ones: walk backwards.
  for (int i = static_cast<int>(symbols.size()) - 1; i >= 0; --i) {
    const Symbol& s = symbols[i];
    if (s.kind == SymbolKind::kScope) continue;
    if (!Contains(s.visible, line, col)) continue;
    // A declaration is visible after its name (a def's also inside it).
    if (s.kind != SymbolKind::kDef && s.kind != SymbolKind::kParam &&
        !(s.name_span.end_line < line ||
          (s.name_span.end_line == line && s.name_span.end_col < col))) {
      continue;
    }
    if (seen.insert(s.name).second) out.push_back(i);
  }
  return out;
}

std::string ResolveImport(const lang::ImportStmt& s, const std::string& path,
                          const std::string& stdlib_dir) {
  interp::Options options;
  options.stdlib_dir = stdlib_dir;
  std::vector<lang::Diagnostic> unused;
  lang::DiagnosticSink sink(&unused);
  interp::ModuleLoader loader(options, &sink);
  return loader.ResolveImport(s, path);
}

namespace {

std::vector<ModuleMember> PublicMembers(const lang::Program& program) {
  std::vector<ModuleMember> out;
  for (const lang::StmtPtr& stmt : program.stmts) {
    ModuleMember m;
    switch (stmt->kind) {
      case lang::StmtKind::kDef: {
        const auto& s = static_cast<const lang::DefStmt&>(*stmt);
        m = {s.name, SymbolKind::kDef, s.name_span, ParamNames(s.params)};
        break;
      }
      case lang::StmtKind::kVar: {
        const auto& s = static_cast<const lang::VarStmt&>(*stmt);
        m = {s.name,
             s.is_state ? SymbolKind::kState : SymbolKind::kVar,
             s.name_span,
             {}};
        break;
      }
      case lang::StmtKind::kLet: {
        const auto& s = static_cast<const lang::LetStmt&>(*stmt);
        if (s.pattern.kind != lang::Pattern::Kind::kName) continue;
        m = {s.pattern.name, SymbolKind::kLet, s.pattern.span, {}};
        if (s.value && s.value->kind == lang::ExprKind::kLambda) {
          m.params =
              ParamNames(static_cast<const lang::LambdaExpr&>(*s.value).params);
        }
        break;
      }
      default:
        continue;
    }
    if (m.name.empty() || m.name[0] == '_') continue;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

const ModuleFile* ModuleCache::Get(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_time_type mtime =
      std::filesystem::last_write_time(path, ec);
  if (ec) return nullptr;
  Entry& e = files_[path];
  if (e.file != nullptr && e.mtime == mtime) return e.file.get();
  absl::StatusOr<std::shared_ptr<lang::SourceFile>> src =
      lang::SourceFile::Read(path);
  if (!src.ok()) {
    files_.erase(path);
    return nullptr;
  }
  auto file = std::make_unique<ModuleFile>();
  file->source = *src;
  file->parsed = lang::Parse(**src);
  file->members = PublicMembers(*file->parsed.program);
  e = Entry{.mtime = mtime, .file = std::move(file)};
  return e.file.get();
}

std::unique_ptr<Analysis> Analyze(const std::string& path, std::string text,
                                  const AnalyzeOptions& options) {
  auto a = std::make_unique<Analysis>();
  a->path = path;
  auto source = std::make_shared<lang::SourceFile>(path, text);
  a->source = source;
  Clock::time_point t0 = Clock::now();
  lang::ParseResult parsed = lang::Parse(*source);
  a->parse_ms = MsSince(t0);
  a->program = std::move(parsed.program);
  a->parse_tree = std::move(parsed.parse_tree);
  a->diagnostics = std::move(parsed.errors);
  a->syntax_ok = a->diagnostics.empty();
  Walker(a.get()).Walk(*a->program, options.stdlib_dir);
  if (!a->syntax_ok || !options.check) return a;

  t0 = Clock::now();
  CheckResult checked =
      options.checker.empty()
          ? CheckHere(path, std::move(text), options.stdlib_dir)
          : CheckInChild(options.checker, path, text, options.check_timeout_s);
  a->checked = true;
  for (lang::Diagnostic& d : checked.diagnostics) {
    a->diagnostics.push_back(std::move(d));
  }
  a->types = std::move(checked.types);
  absl::flat_hash_map<std::tuple<int, int, std::string>, size_t> bound;
  for (size_t i = 0; i < checked.bound.size(); ++i) {
    const CheckResult::Bound& b = checked.bound[i];
    bound.emplace(std::make_tuple(b.line, b.col, b.name), i);
  }
  for (Symbol& s : a->symbols) {
    auto it =
        bound.find(std::make_tuple(s.name_span.line, s.name_span.col, s.name));
    if (it == bound.end()) {
      it = bound.find(std::make_tuple(s.full.line, s.full.col, s.name));
    }
    if (it != bound.end()) {
      s.type = checked.bound[it->second].type;
      s.extra = checked.bound[it->second].extra;
    }
  }
  a->check_ms = MsSince(t0);
  return a;
}

}  // namespace runnel::lsp
