#include "lang/parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/strings.h"

namespace runnel::lang {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// ---------------------------------------------------------------------------
// A compact S-expression rendering of the AST, so that tests can state the
// expected tree in one line: `a + b * c` is "(+ a (* b c))".

std::string DumpExpr(const Expr* e);
std::string DumpStmt(const Stmt* s);

std::string DumpBlock(const Block& b) {
  std::string out = "{";
  for (size_t i = 0; i < b.stmts.size(); ++i) {
    out += (i > 0 ? "; " : "") + DumpStmt(b.stmts[i].get());
  }
  return out + "}";
}

std::string DumpPattern(const Pattern& p) {
  switch (p.kind) {
    case Pattern::Kind::kName:
      return p.name;
    case Pattern::Kind::kDiscard:
      return "_";
    case Pattern::Kind::kTuple: {
      std::string out = "(";
      for (size_t i = 0; i < p.elements.size(); ++i) {
        out += (i > 0 ? " " : "") + DumpPattern(p.elements[i]);
      }
      return out + ")";
    }
  }
  return "?";
}

std::string DumpType(const TypeAnnotation& t) {
  std::string out = t.dtype;
  if (!t.has_dims) return out;
  out += "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    out += (i > 0 ? " " : "") + (t.dims[i] ? DumpExpr(t.dims[i].get()) : "?");
  }
  return out + "]";
}

std::string DumpParams(const std::vector<Param>& params) {
  std::string out = "(";
  for (size_t i = 0; i < params.size(); ++i) {
    out += (i > 0 ? " " : "") + params[i].name;
    if (params[i].default_value) {
      out += "=" + DumpExpr(params[i].default_value.get());
    }
  }
  return out + ")";
}

std::string DumpOpt(const ExprPtr& e) { return e ? DumpExpr(e.get()) : "_"; }

std::string DumpExpr(const Expr* e) {
  if (e == nullptr) return "<null>";
  switch (e->kind) {
    case ExprKind::kInt:
      return StrCat(static_cast<const IntExpr*>(e)->value);
    case ExprKind::kFloat:
      return fmt::format("{:g}f", static_cast<const FloatExpr*>(e)->value);
    case ExprKind::kString:
      return StrCat("\"", static_cast<const StringExpr*>(e)->value, "\"");
    case ExprKind::kBool:
      return static_cast<const BoolExpr*>(e)->value ? "true" : "false";
    case ExprKind::kNone:
      return "none";
    case ExprKind::kName:
      return static_cast<const NameExpr*>(e)->name;
    case ExprKind::kList:
    case ExprKind::kTuple: {
      auto* s = static_cast<const SequenceExpr*>(e);
      std::string out = e->kind == ExprKind::kList ? "[" : "(tuple";
      for (size_t i = 0; i < s->elements.size(); ++i) {
        out += (i > 0 || e->kind == ExprKind::kTuple ? " " : "") +
               DumpExpr(s->elements[i].get());
      }
      return out + (e->kind == ExprKind::kList ? "]" : ")");
    }
    case ExprKind::kRecord: {
      auto* r = static_cast<const RecordExpr*>(e);
      std::string out = "{";
      for (size_t i = 0; i < r->fields.size(); ++i) {
        out += (i > 0 ? " " : "") + r->fields[i].name + ": " +
               DumpExpr(r->fields[i].value.get());
      }
      return out + "}";
    }
    case ExprKind::kUnary: {
      auto* u = static_cast<const UnaryExpr*>(e);
      return StrCat("(", u->op == UnaryOp::kNeg ? "neg" : "not", " ",
                    DumpExpr(u->operand.get()), ")");
    }
    case ExprKind::kBinary: {
      auto* b = static_cast<const BinaryExpr*>(e);
      return StrCat("(", BinaryOpText(b->op), " ", DumpExpr(b->lhs.get()), " ",
                    DumpExpr(b->rhs.get()), ")");
    }
    case ExprKind::kCall: {
      auto* c = static_cast<const CallExpr*>(e);
      std::string out = "(call " + DumpExpr(c->callee.get());
      for (const Arg& a : c->args) {
        out += " " + (a.name.empty() ? "" : a.name + "=") +
               DumpExpr(a.value.get());
      }
      return out + ")";
    }
    case ExprKind::kIndex: {
      auto* x = static_cast<const IndexExpr*>(e);
      std::string out = "(index " + DumpExpr(x->target.get());
      for (const Subscript& s : x->subscripts) {
        out +=
            " " + (s.is_slice ? StrCat("(slice ", DumpOpt(s.lo), " ",
                                       DumpOpt(s.hi), " ", DumpOpt(s.step), ")")
                              : DumpExpr(s.index.get()));
      }
      return out + ")";
    }
    case ExprKind::kMember: {
      auto* m = static_cast<const MemberExpr*>(e);
      return StrCat("(. ", DumpExpr(m->target.get()), " ", m->name, ")");
    }
    case ExprKind::kIf: {
      auto* i = static_cast<const IfExpr*>(e);
      std::string out = StrCat("(if ", DumpExpr(i->cond.get()), " ",
                               DumpBlock(i->then_block));
      if (i->else_block) out += " else " + DumpBlock(*i->else_block);
      if (i->else_if) out += " else " + DumpExpr(i->else_if.get());
      return out + ")";
    }
    case ExprKind::kLoop: {
      auto* l = static_cast<const LoopExpr*>(e);
      std::string head = l->is_for ? StrCat("for ", DumpPattern(l->var), " in ",
                                            DumpExpr(l->iterable.get()))
                                   : StrCat("while ", DumpExpr(l->cond.get()));
      return StrCat("(loop ", DumpPattern(l->state), " = ",
                    DumpExpr(l->init.get()), " ", head, " ", DumpBlock(l->body),
                    ")");
    }
    case ExprKind::kLambda: {
      auto* l = static_cast<const LambdaExpr*>(e);
      return StrCat("(fn ", DumpParams(l->params), " ",
                    l->body_block ? DumpBlock(*l->body_block)
                                  : "=> " + DumpExpr(l->body_expr.get()),
                    ")");
    }
    case ExprKind::kRun: {
      auto* r = static_cast<const RunExpr*>(e);
      return StrCat("(run ", DumpExpr(r->fetches.get()),
                    r->feeds ? " with " + DumpExpr(r->feeds.get()) : "", ")");
    }
    case ExprKind::kAssign: {
      auto* a = static_cast<const AssignExpr*>(e);
      return StrCat("(", AssignOpText(a->op), " ", DumpExpr(a->target.get()),
                    " ", DumpExpr(a->value.get()), ")");
    }
  }
  return "?";
}

std::string DumpStmt(const Stmt* s) {
  switch (s->kind) {
    case StmtKind::kLet: {
      auto* l = static_cast<const LetStmt*>(s);
      return StrCat("(let ", DumpPattern(l->pattern), " ",
                    DumpExpr(l->value.get()), ")");
    }
    case StmtKind::kVar: {
      auto* v = static_cast<const VarStmt*>(s);
      return StrCat("(", v->is_state ? "state " : "var ", v->name,
                    v->type ? ": " + DumpType(*v->type) : "", " ",
                    DumpExpr(v->init.get()), ")");
    }
    case StmtKind::kInput: {
      auto* i = static_cast<const InputStmt*>(s);
      return StrCat(
          "(input ", i->name, ": ", DumpType(i->type),
          i->default_value ? " " + DumpExpr(i->default_value.get()) : "", ")");
    }
    case StmtKind::kDef: {
      auto* d = static_cast<const DefStmt*>(s);
      return StrCat("(def ", d->name, " ", DumpParams(d->params), " ",
                    d->body_block ? DumpBlock(*d->body_block)
                                  : "= " + DumpExpr(d->body_expr.get()),
                    ")");
    }
    case StmtKind::kImport: {
      auto* i = static_cast<const ImportStmt*>(s);
      return i->path.empty()
                 ? StrCat("(import ", i->module, " as ", i->alias, ")")
                 : StrCat("(import \"", i->path, "\" as ", i->alias, ")");
    }
    case StmtKind::kReturn: {
      auto* r = static_cast<const ReturnStmt*>(s);
      return r->value ? StrCat("(return ", DumpExpr(r->value.get()), ")")
                      : "(return)";
    }
    case StmtKind::kBreak:
      return "(break)";
    case StmtKind::kContinue:
      return "(continue)";
    case StmtKind::kFor: {
      auto* f = static_cast<const ForStmt*>(s);
      return StrCat("(for ", DumpPattern(f->var), " ",
                    DumpExpr(f->iterable.get()), " ", DumpBlock(f->body), ")");
    }
    case StmtKind::kScope:
    case StmtKind::kDevice:
    case StmtKind::kAfter: {
      auto* a = static_cast<const AnnotateStmt*>(s);
      const char* word = s->kind == StmtKind::kScope    ? "scope"
                         : s->kind == StmtKind::kDevice ? "device"
                                                        : "after";
      return StrCat("(", word, " ", DumpExpr(a->arg.get()), " ",
                    DumpBlock(a->body), ")");
    }
    case StmtKind::kRebind: {
      auto* r = static_cast<const RebindStmt*>(s);
      return StrCat("(= ", DumpPattern(r->pattern), " ",
                    DumpExpr(r->value.get()), ")");
    }
    case StmtKind::kExpr:
      return DumpExpr(static_cast<const ExprStmt*>(s)->expr.get());
  }
  return "?";
}

std::string Render(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) {
    out += StrCat(d.span.line, ":", d.span.col, ": ", d.message, "\n");
  }
  return out;
}

// Parses `text`, which must have no errors, and renders its statements.
std::string Dump(std::string_view text) {
  ParseResult r = Parse(SourceFile("test.rnl", std::string(text)));
  EXPECT_THAT(r.errors, IsEmpty()) << text << "\n" << Render(r.errors);
  std::string out;
  for (size_t i = 0; i < r.program->stmts.size(); ++i) {
    out += (i > 0 ? "; " : "") + DumpStmt(r.program->stmts[i].get());
  }
  return out;
}

// The errors of `text` as "line:col: message".
std::vector<std::string> Errors(std::string_view text) {
  ParseResult r = Parse(SourceFile("test.rnl", std::string(text)));
  std::vector<std::string> out;
  for (const Diagnostic& d : r.errors) {
    out.push_back(StrCat(d.span.line, ":", d.span.col, ": ", d.message));
  }
  return out;
}

// The one statement of `text`.
ParseResult ParseOne(std::string_view text) {
  ParseResult r = Parse(SourceFile("test.rnl", std::string(text)));
  EXPECT_THAT(r.errors, IsEmpty()) << Render(r.errors);
  EXPECT_EQ(r.program->stmts.size(), 1u);
  return r;
}

std::string SpanText(const SourceSpan& s) {
  return StrCat(s.line, ":", s.col, "-", s.end_line, ":", s.end_col);
}

// ---------------------------------------------------------------------------
// Literals

TEST(ParserTest, IntegerLiterals) {
  EXPECT_EQ(Dump("0"), "0");
  EXPECT_EQ(Dump("42"), "42");
  EXPECT_EQ(Dump("1_000_000"), "1000000");
  EXPECT_EQ(Dump("9223372036854775807"), "9223372036854775807");
}

TEST(ParserTest, IntegerTooLargeIsAnError) {
  EXPECT_THAT(Errors("let a = 9223372036854775808"),
              ElementsAre("1:9: integer literal 9223372036854775808 is too "
                          "large; the largest integer is 9223372036854775807"));
  EXPECT_THAT(
      Errors("let a = 99_999_999_999_999_999_999"),
      ElementsAre(HasSubstr("1:9: integer literal "
                            "99_999_999_999_999_999_999 is too large")));
}

TEST(ParserTest, FloatLiterals) {
  ParseResult r = ParseOne("[1.0, .5, 1e-3, 2.5E+4, 1_0.2_5, 3e2]");
  auto* list = static_cast<const SequenceExpr*>(
      static_cast<const ExprStmt*>(r.program->stmts[0].get())->expr.get());
  ASSERT_EQ(list->kind, ExprKind::kList);
  std::vector<double> values;
  for (const ExprPtr& e : list->elements) {
    ASSERT_EQ(e->kind, ExprKind::kFloat);
    values.push_back(static_cast<const FloatExpr*>(e.get())->value);
  }
  EXPECT_THAT(values, ElementsAre(1.0, 0.5, 1e-3, 2.5e4, 10.25, 300.0));
  EXPECT_THAT(Errors("let a = 1e999"),
              ElementsAre("1:9: float literal 1e999 is out of range"));
}

TEST(ParserTest, StringLiteralsDecodeEscapes) {
  ParseResult r = ParseOne(R"(let s = "a\nb\tc\\d\"e")");
  auto* let = static_cast<const LetStmt*>(r.program->stmts[0].get());
  ASSERT_EQ(let->value->kind, ExprKind::kString);
  EXPECT_EQ(static_cast<const StringExpr*>(let->value.get())->value,
            "a\nb\tc\\d\"e");
  EXPECT_EQ(Dump(R"("")"), R"("")");
  EXPECT_EQ(Dump("\"héllo → ✓\""), "\"héllo → ✓\"");
}

TEST(ParserTest, OtherLiterals) {
  EXPECT_EQ(Dump("true; false; none; x; _"), "true; false; none; x; _");
  EXPECT_EQ(Dump("[1, 2, 3]"), "[1 2 3]");
  EXPECT_EQ(Dump("[[1.0, 2.0], [3.0, 4.0],]"), "[[1f 2f] [3f 4f]]");
  EXPECT_EQ(Dump("[]"), "[]");
  EXPECT_EQ(Dump("(a, b)"), "(tuple a b)");
  EXPECT_EQ(Dump("(a,)"), "(tuple a)");
  EXPECT_EQ(Dump("()"), "(tuple)");
  EXPECT_EQ(Dump("(a)"), "a");
  EXPECT_EQ(Dump("{x: a, y: b}"), "{x: a y: b}");
  EXPECT_EQ(Dump("{}"), "{}");
  EXPECT_EQ(Dump("{scope: 1, if: 2}"), "{scope: 1 if: 2}");
}

// ---------------------------------------------------------------------------
// Operators and precedence (docs/language.md §5)

TEST(ParserTest, ArithmeticPrecedence) {
  EXPECT_EQ(Dump("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(Dump("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(Dump("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(Dump("a / b // c % d"), "(% (// (/ a b) c) d)");
  EXPECT_EQ(Dump("x @ w + b"), "(+ (@ x w) b)");
  EXPECT_EQ(Dump("(a + b) * c"), "(* (+ a b) c)");
}

TEST(ParserTest, PowerAndUnaryMinus) {
  EXPECT_EQ(Dump("-x ** 2"), "(neg (** x 2))");
  EXPECT_EQ(Dump("a ** b ** c"), "(** a (** b c))");
  EXPECT_EQ(Dump("2 ** -1"), "(** 2 (neg 1))");
  EXPECT_EQ(Dump("-a * b"), "(* (neg a) b)");
  EXPECT_EQ(Dump("--a"), "(neg (neg a))");
  EXPECT_EQ(Dump("a.b ** 2"), "(** (. a b) 2)");
}

TEST(ParserTest, ComparisonsRangesAndLogic) {
  EXPECT_EQ(Dump("a < b"), "(< a b)");
  EXPECT_EQ(Dump("a == b; a != b; a <= b; a >= b; a > b"),
            "(== a b); (!= a b); (<= a b); (>= a b); (> a b)");
  EXPECT_EQ(Dump("a + 1 < b * 2"), "(< (+ a 1) (* b 2))");
  EXPECT_EQ(Dump("0..n + 1"), "(.. 0 (+ n 1))");
  EXPECT_EQ(Dump("not a and b"), "(and (not a) b)");
  EXPECT_EQ(Dump("not a < b and c or d"), "(or (and (not (< a b)) c) d)");
  EXPECT_EQ(Dump("a or b and not c"), "(or a (and b (not c)))");
  EXPECT_EQ(Dump("a or b or c"), "(or (or a b) c)");
  EXPECT_EQ(Dump("a and b and c"), "(and (and a b) c)");
}

TEST(ParserTest, ComparisonsDoNotChain) {
  EXPECT_THAT(Errors("let c = a < b < c"),
              ElementsAre("1:15: comparisons do not chain: write 'a < b and b "
                          "< c' instead of 'a < b < c'"));
  EXPECT_THAT(Errors("a == b == c"), ElementsAre(HasSubstr("do not chain")));
  EXPECT_THAT(Errors("a < b < c < d"),
              ElementsAre(HasSubstr("1:7: comparisons do not chain"),
                          HasSubstr("1:11: comparisons do not chain")));
  EXPECT_EQ(Dump("(a < b) < c"), "(< (< a b) c)");
  EXPECT_EQ(Dump("a < (b < c)"), "(< a (< b c))");
  EXPECT_EQ(Dump("0..n == r"), "(== (.. 0 n) r)");
  // A comparison token where none can go is not a chain.
  EXPECT_THAT(Errors("let x < 3"),
              ElementsAre("1:7: unexpected '<'; expected '='"));
}

TEST(ParserTest, RangesDoNotChain) {
  EXPECT_THAT(Errors("let r = 0..1..2"),
              ElementsAre("1:13: ranges do not chain: a range is "
                          "'start..stop'"));
  EXPECT_EQ(Dump("(0..1)..2"), "(.. (.. 0 1) 2)");
}

TEST(ParserTest, NotIsLooserThanArithmetic) {
  EXPECT_EQ(Dump("not a + b"), "(not (+ a b))");
  EXPECT_EQ(Dump("not not a"), "(not (not a))");
  EXPECT_THAT(Errors("let w = 1 + not x"),
              ElementsAre("1:13: expected an expression after '+'"));
  EXPECT_THAT(Errors("let v = -not x"),
              ElementsAre("1:10: expected an expression after '-'"));
}

TEST(ParserTest, Postfix) {
  EXPECT_EQ(Dump("f(a, b = 1)(c)"), "(call (call f a b=1) c)");
  EXPECT_EQ(Dump("f()"), "(call f)");
  EXPECT_EQ(Dump("x.shape[1]"), "(index (. x shape) 1)");
  EXPECT_EQ(Dump("xs[0].shape"), "(. (index xs 0) shape)");
  EXPECT_EQ(Dump("nn.dense(x, 10)"), "(call (. nn dense) x 10)");
  EXPECT_EQ(Dump("trainable_vars(scope = \"enc\")"),
            "(call trainable_vars scope=\"enc\")");
  EXPECT_EQ(Dump("r.if"), "(. r if)");
}

TEST(ParserTest, IndexingAndSlices) {
  EXPECT_EQ(Dump("x[i]"), "(index x i)");
  EXPECT_EQ(Dump("x[i, j]"), "(index x i j)");
  EXPECT_EQ(Dump("x[a:b]"), "(index x (slice a b _))");
  EXPECT_EQ(Dump("x[:, 1:]"), "(index x (slice _ _ _) (slice 1 _ _))");
  EXPECT_EQ(Dump("x[::2]"), "(index x (slice _ _ 2))");
  EXPECT_EQ(Dump("x[a:b:c, i]"), "(index x (slice a b c) i)");
  EXPECT_EQ(Dump("x[:-1]"), "(index x (slice _ (neg 1) _))");
  EXPECT_EQ(Dump("x[-1]"), "(index x (neg 1))");
}

TEST(ParserTest, AssignmentExpressions) {
  EXPECT_EQ(Dump("w := w * 0.5"), "(:= w (* w 0.5f))");
  EXPECT_EQ(Dump("w += g ; w -= g"), "(+= w g); (-= w g)");
  EXPECT_EQ(Dump("a *= 2; a /= 2"), "(*= a 2); (/= a 2)");
  EXPECT_EQ(Dump("let bump = (step += 1)"), "(let bump (+= step 1))");
  EXPECT_EQ(Dump("s.count := 0"), "(:= (. s count) 0)");
  EXPECT_EQ(Dump("xs[0] += 1"), "(+= (index xs 0) 1)");
  EXPECT_EQ(Dump("a := b := c"), "(:= a (:= b c))");
  EXPECT_EQ(Dump("w := w * 0.5 or x"), "(:= w (or (* w 0.5f) x))");
}

// The grammar takes any operand left of an assignment operator and any
// expression left of '=', so that one token decides; the builder checks.
TEST(ParserTest, AssignmentTargets) {
  EXPECT_THAT(Errors("a + b := 3"),
              ElementsAre("1:1: ':=' needs a var, a state or a let name on "
                          "its left, not an operator expression"));
  EXPECT_THAT(Errors("let y = (not x += 1)"),
              ElementsAre(HasSubstr("1:10: '+=' needs a var")));
  EXPECT_THAT(Errors("-x -= 1"), ElementsAre(HasSubstr("1:1: '-=' needs")));
  EXPECT_THAT(Errors("a < b := c"), ElementsAre(HasSubstr("1:1: ':=' needs")));
  // After a syntax error in the statement, no second error.
  EXPECT_THAT(Errors("a + := 3"),
              ElementsAre("1:5: expected an expression after '+'"));
}

TEST(ParserTest, RebindingTargets) {
  EXPECT_EQ(Dump("x = 1"), "(= x 1)");
  EXPECT_EQ(Dump("_ = f()"), "(= _ (call f))");
  EXPECT_EQ(Dump("((a, _), c) = p"), "(= ((a _) c) p)");
  EXPECT_EQ(Dump("(a,) = p"), "(= (a) p)");
  EXPECT_EQ(Dump("(a) = p"), "(= (a) p)");  // a tuple of one, as after `let`
  const std::string names = "its left side must be a name or a tuple of names";
  EXPECT_THAT(
      Errors("f(x) = 3"),
      ElementsAre(StrCat("1:1: '=' rebinds names: ", names, ", not a call")));
  EXPECT_THAT(Errors("s.count = 0"),
              ElementsAre(StrCat("1:1: '=' rebinds names: ", names,
                                 ", not a member; to assign a var or state, "
                                 "write ':='")));
  EXPECT_THAT(Errors("xs[0] = 1"), ElementsAre(HasSubstr("not an element")));
  EXPECT_THAT(Errors("(a, 1) = p"),
              ElementsAre(HasSubstr("1:5: '=' rebinds names")));
  EXPECT_THAT(Errors("() = p"), ElementsAre(HasSubstr("not an empty tuple")));
  EXPECT_THAT(Errors("[a, b] = p"),
              ElementsAre(HasSubstr("not a list; write a tuple '(a, b)'")));
  EXPECT_THAT(Errors("a + b = 3"), ElementsAre(HasSubstr("not an expression")));
  EXPECT_THAT(Errors("x = y = 3"),
              ElementsAre("1:7: unexpected '='; expected a newline or ';'"));
  // After a syntax error in the statement, no second error.
  EXPECT_THAT(Errors("f(x) ="),
              ElementsAre("1:7: expected an expression after '='"));
}

TEST(ParserTest, Conditionals) {
  EXPECT_EQ(Dump("let y = if p > 0.5 { a * 2 } else { b }"),
            "(let y (if (> p 0.5f) {(* a 2)} else {b}))");
  EXPECT_EQ(Dump("if a { b } else if c { d } else { e }"),
            "(if a {b} else (if c {d} else {e}))");
  EXPECT_EQ(Dump("if step % 100 == 0 { print(\"step\", step) }"),
            "(if (== (% step 100) 0) {(call print \"step\" step)})");
  EXPECT_EQ(Dump("let y = (if c { 1 } else { 2 }) + 1"),
            "(let y (+ (if c {1} else {2}) 1))");
}

TEST(ParserTest, Loops) {
  EXPECT_EQ(
      Dump(
          "let (a, b) = loop (a, b) = (0.0, 1.0) for i in 0..n { (b, a + b) }"),
      "(let (a b) (loop (a b) = (tuple 0f 1f) for i in (.. 0 n) "
      "{(tuple b (+ a b))}))");
  EXPECT_EQ(Dump("let x = loop x = 1.0 while x < limit { x * 2.0 }"),
            "(let x (loop x = 1f while (< x limit) {(* x 2f)}))");
  EXPECT_EQ(Dump("for b in batches(train, 128, shuffle = true) { break }"),
            "(for b (call batches train 128 shuffle=true) {(break)})");
  EXPECT_EQ(Dump("for (x, _) in pairs { continue }"),
            "(for (x _) pairs {(continue)})");
}

TEST(ParserTest, Functions) {
  EXPECT_EQ(Dump("def sq(x) = x * x"), "(def sq (x) = (* x x))");
  EXPECT_EQ(Dump("def dense(x, units, act = identity) {\n"
                 "    var w = glorot_uniform([x.shape[1], units])\n"
                 "    act(x @ w)\n"
                 "}"),
            "(def dense (x units act=identity) {(var w (call glorot_uniform "
            "[(index (. x shape) 1) units])); (call act (@ x w))})");
  EXPECT_EQ(Dump("def f() { return }"), "(def f () {(return)})");
  EXPECT_EQ(Dump("def f(x,) { return x + 1 }"),
            "(def f (x) {(return (+ x 1))})");
  EXPECT_EQ(Dump("let twice = fn(f, x) => f(f(x))"),
            "(let twice (fn (f x) => (call f (call f x))))");
  EXPECT_EQ(Dump("let g = fn() { a; b }"), "(let g (fn () {a; b}))");
  EXPECT_EQ(Dump("dense(x, 128, act = relu)"), "(call dense x 128 act=relu)");
}

TEST(ParserTest, RunExpressions) {
  EXPECT_EQ(Dump("let l = run loss with {x: xb, y: yb}"),
            "(let l (run loss with {x: xb y: yb}))");
  EXPECT_EQ(Dump("let (l, _) = run (loss, step) with b"),
            "(let (l _) (run (tuple loss step) with b))");
  EXPECT_EQ(Dump("run acc"), "(run acc)");
  EXPECT_EQ(Dump("print(\"acc\", run acc with test)"),
            "(call print \"acc\" (run acc with test))");
}

// ---------------------------------------------------------------------------
// Declarations and statements (docs/language.md §4)

TEST(ParserTest, Declarations) {
  EXPECT_EQ(Dump("input x: f32[?, 784]"), "(input x: f32[? 784])");
  EXPECT_EQ(Dump("input keep: f32[] = 1.0"), "(input keep: f32[] 1f)");
  EXPECT_EQ(Dump("input n: i32"), "(input n: i32)");
  EXPECT_EQ(Dump("var w = random_normal([784, 10], stddev = 0.01)"),
            "(var w (call random_normal [784 10] stddev=0.01f))");
  EXPECT_EQ(Dump("var b: f32[10] = zeros([10])"),
            "(var b: f32[10] (call zeros [10]))");
  EXPECT_EQ(Dump("state step = 0"), "(state step 0)");
  EXPECT_EQ(Dump("state step: i64 = 0"), "(state step: i64 0)");
  EXPECT_EQ(Dump("let h = relu(x @ w)"), "(let h (call relu (@ x w)))");
  EXPECT_EQ(Dump("let (a, (b, _)) = p"), "(let (a (b _)) p)");
  EXPECT_EQ(Dump("h = h * 2"), "(= h (* h 2))");
  EXPECT_EQ(Dump("(a, b) = (b, a)"), "(= (a b) (tuple b a))");
}

TEST(ParserTest, DeclarationKinds) {
  ParseResult r = ParseOne("state s: f32[2, n] = zeros([2, n])");
  auto* v = static_cast<const VarStmt*>(r.program->stmts[0].get());
  ASSERT_EQ(v->kind, StmtKind::kVar);
  EXPECT_TRUE(v->is_state);
  EXPECT_EQ(v->name, "s");
  EXPECT_EQ(SpanText(v->name_span), "1:7-1:7");
  ASSERT_TRUE(v->type.has_value());
  EXPECT_EQ(v->type->dtype, "f32");
  ASSERT_EQ(v->type->dims.size(), 2u);
  EXPECT_EQ(v->type->dims[1]->kind, ExprKind::kName);

  r = ParseOne("let (a, _) = p");
  auto* let = static_cast<const LetStmt*>(r.program->stmts[0].get());
  ASSERT_EQ(let->pattern.kind, Pattern::Kind::kTuple);
  EXPECT_EQ(let->pattern.elements[0].kind, Pattern::Kind::kName);
  EXPECT_EQ(let->pattern.elements[1].kind, Pattern::Kind::kDiscard);
  EXPECT_EQ(SpanText(let->pattern.span), "1:5-1:10");
}

TEST(ParserTest, ImportsAndBlocks) {
  EXPECT_EQ(Dump("import nn"), "(import nn as nn)");
  EXPECT_EQ(Dump("import nn as layers"), "(import nn as layers)");
  EXPECT_EQ(Dump("import \"lib/x.rnl\" as x"), "(import \"lib/x.rnl\" as x)");
  EXPECT_EQ(Dump("scope \"enc\" { let e = 1 }"), "(scope \"enc\" {(let e 1)})");
  EXPECT_EQ(Dump("device \"/gpu:0\" { let e = 1 }"),
            "(device \"/gpu:0\" {(let e 1)})");
  EXPECT_EQ(Dump("after (a, b) { noop() }"),
            "(after (tuple a b) {(call noop)})");
  EXPECT_EQ(Dump("scope \"a\" {}"), "(scope \"a\" {})");

  ParseResult r = ParseOne("import \"lib/x.rnl\" as x");
  auto* import = static_cast<const ImportStmt*>(r.program->stmts[0].get());
  EXPECT_EQ(import->module, "");
  EXPECT_EQ(import->path, "lib/x.rnl");
  EXPECT_EQ(import->alias, "x");
}

// ---------------------------------------------------------------------------
// Spans

TEST(ParserTest, Spans) {
  ParseResult r = ParseOne("let logits = h @ w2 + b");
  const Stmt* stmt = r.program->stmts[0].get();
  EXPECT_EQ(SpanText(stmt->span), "1:1-1:23");
  EXPECT_EQ(stmt->span.file, "test.rnl");
  auto* add = static_cast<const BinaryExpr*>(
      static_cast<const LetStmt*>(stmt)->value.get());
  ASSERT_EQ(add->kind, ExprKind::kBinary);
  EXPECT_EQ(SpanText(add->span), "1:14-1:23");
  EXPECT_EQ(SpanText(add->op_span), "1:21-1:21");
  auto* matmul = static_cast<const BinaryExpr*>(add->lhs.get());
  EXPECT_EQ(matmul->op, BinaryOp::kMatMul);
  EXPECT_EQ(SpanText(matmul->span), "1:14-1:19");
  EXPECT_EQ(SpanText(matmul->op_span), "1:16-1:16");
  EXPECT_EQ(SpanText(matmul->rhs->span), "1:18-1:19");
}

TEST(ParserTest, SpansOverLinesAndOperators) {
  ParseResult r = ParseOne("\n  let a = f(x,\n    y) ** 2  # done\n");
  auto* let = static_cast<const LetStmt*>(r.program->stmts[0].get());
  EXPECT_EQ(SpanText(let->span), "2:3-3:11");
  auto* pow = static_cast<const BinaryExpr*>(let->value.get());
  EXPECT_EQ(SpanText(pow->op_span), "3:8-3:9");
  auto* call = static_cast<const CallExpr*>(pow->lhs.get());
  EXPECT_EQ(SpanText(call->span), "2:11-3:6");
  EXPECT_EQ(SpanText(call->args[1].span), "3:5-3:5");

  r = ParseOne("x := \"é\" + y");  // columns count bytes
  auto* assign = static_cast<const AssignExpr*>(
      static_cast<const ExprStmt*>(r.program->stmts[0].get())->expr.get());
  auto* plus = static_cast<const BinaryExpr*>(assign->value.get());
  EXPECT_EQ(SpanText(plus->lhs->span), "1:6-1:9");
  EXPECT_EQ(SpanText(plus->op_span), "1:11-1:11");
}

TEST(ParserTest, BlockAndIfSpans) {
  ParseResult r = ParseOne("if a {\n  b\n} else {\n  c\n}");
  auto* e = static_cast<const IfExpr*>(
      static_cast<const ExprStmt*>(r.program->stmts[0].get())->expr.get());
  EXPECT_EQ(SpanText(e->span), "1:1-5:1");
  EXPECT_EQ(SpanText(e->then_block.span), "1:6-3:1");
  ASSERT_TRUE(e->else_block.has_value());
  EXPECT_EQ(SpanText(e->else_block->span), "3:8-5:1");
  EXPECT_EQ(SpanText(e->else_block->stmts[0]->span), "4:3-4:3");
}

// ---------------------------------------------------------------------------
// Statement ends (docs/language.md §2)

TEST(ParserTest, NewlinesEndStatements) {
  EXPECT_EQ(Dump("a\nb\n\n\nc"), "a; b; c");
  EXPECT_EQ(Dump("a\n-b"), "a; (neg b)");
  EXPECT_EQ(Dump("\n\n  a  \n\n"), "a");
  EXPECT_EQ(Dump(""), "");
  EXPECT_EQ(Dump("a\r\nb\r\n"), "a; b");
}

TEST(ParserTest, SemicolonsSeparateStatements) {
  EXPECT_EQ(Dump("a; b;c"), "a; b; c");
  EXPECT_EQ(Dump("let a = 1; let b = 2;"), "(let a 1); (let b 2)");
  EXPECT_EQ(Dump(";;a;;"), "a");
  EXPECT_EQ(Dump("if a { b; c } else { d }"), "(if a {b; c} else {d})");
}

TEST(ParserTest, NewlinesInsideBracketsDoNotEndStatements) {
  EXPECT_EQ(Dump("f(a,\n  b)"), "(call f a b)");
  EXPECT_EQ(Dump("f(\n  a\n  , b\n)"), "(call f a b)");
  EXPECT_EQ(Dump("let l = [\n    1\n]"), "(let l [1])");
  EXPECT_EQ(Dump("let t = (a\n  + b)"), "(let t (+ a b))");
  EXPECT_EQ(Dump("x[\n  0\n]"), "(index x 0)");
}

TEST(ParserTest, NewlinesAfterContinuationTokensDoNotEndStatements) {
  EXPECT_EQ(Dump("let s = a +\n    b"), "(let s (+ a b))");
  EXPECT_EQ(Dump("let s = a *\n\n  b"), "(let s (* a b))");
  EXPECT_EQ(Dump("let x =\n    1"), "(let x 1)");
  EXPECT_EQ(Dump("let f = fn(x) =>\n    x"), "(let f (fn (x) => x))");
  EXPECT_EQ(Dump("let c = a and  # comment\n    # comment line\n    b"),
            "(let c (and a b))");
  EXPECT_EQ(Dump("let r = {\n    x: 1,\n    y: 2\n}"), "(let r {x: 1 y: 2})");
  EXPECT_EQ(Dump("w :=\n  w - 1"), "(:= w (- w 1))");
  EXPECT_EQ(Dump("let r = 0..\n  n"), "(let r (.. 0 n))");
}

TEST(ParserTest, NewlinesInsideBlocksEndStatements) {
  EXPECT_EQ(Dump("let g = f(fn(x) {\n    a\n    b\n})"),
            "(let g (call f (fn (x) {a; b})))");
  EXPECT_EQ(Dump("def f(x) {\n\n  let y = x\n\n  y\n\n}"),
            "(def f (x) {(let y x); y})");
  EXPECT_EQ(
      Dump("for i in 0..3 {\n  print(i)\n  if i > 1 {\n    break\n  }\n}"),
      "(for i (.. 0 3) {(call print i); (if (> i 1) {(break)})})");
}

TEST(ParserTest, Comments) {
  EXPECT_EQ(Dump("# a comment\na  # trailing\n# another\nb # last"), "a; b");
  EXPECT_EQ(Dump("a  # comment\n    # comment line\nb"), "a; b");
  EXPECT_EQ(Dump("let s = \"# not a comment\""), "(let s \"# not a comment\")");
  EXPECT_EQ(Dump("# only a comment"), "");
}

// ---------------------------------------------------------------------------
// The complete script of docs/language.md §9

constexpr char kCompleteScript[] = R"(import nn
import optim

let dir = "/usr/share/datasets/fashion-mnist/"
def images(f) = reshape(cast(load_idx(dir + f), f32) / 255.0, [-1, 784])
def labels(f) = cast(load_idx(dir + f), i32)
let train = dataset(x = images("train-images-idx3-ubyte.gz"), y = labels("train-labels-idx1-ubyte.gz"))
let test = dataset(x = images("t10k-images-idx3-ubyte.gz"), y = labels("t10k-labels-idx1-ubyte.gz"))

input x: f32[?, 784]
input y: i32[?]
let h = nn.dense(nn.dense(x, 256, act = relu), 128, act = relu)
let logits = nn.dense(h, 10)
let loss = mean(sparse_softmax_cross_entropy(logits, y))
let acc = mean(cast(argmax(logits, axis = 1) == y, f32))
let step = optim.adam(loss, lr = 0.001)

for epoch in 0..arg("epochs", 5) {
    for b in progress(batches(train, 128, shuffle = true, seed = epoch), fmt("epoch {}", epoch)) {
        let (l, _) = run (loss, step) with b
        report(loss = l)
    }
}
print("test accuracy", run acc with test)
save("fashion_mlp.ckpt")
)";

TEST(ParserTest, CompleteScriptParses) {
  ParseResult r = Parse(SourceFile("fashion.rnl", kCompleteScript));
  ASSERT_THAT(r.errors, IsEmpty()) << Render(r.errors);
  const auto& stmts = r.program->stmts;
  ASSERT_EQ(stmts.size(), 17u);
  EXPECT_EQ(r.program->file, "fashion.rnl");
  EXPECT_EQ(stmts[0]->kind, StmtKind::kImport);
  EXPECT_EQ(stmts[3]->kind, StmtKind::kDef);
  EXPECT_EQ(stmts[7]->kind, StmtKind::kInput);
  EXPECT_EQ(stmts[14]->kind, StmtKind::kFor);
  EXPECT_EQ(DumpStmt(stmts[3].get()),
            "(def images (f) = (call reshape (/ (call cast (call load_idx (+ "
            "dir f)) f32) 255f) [(neg 1) 784]))");
  EXPECT_EQ(DumpStmt(stmts[12].get()),
            "(let acc (call mean (call cast (== (call argmax logits axis=1) y) "
            "f32)))");
  EXPECT_EQ(DumpStmt(stmts[14].get()),
            "(for epoch (.. 0 (call arg \"epochs\" 5)) {(for b (call progress "
            "(call batches train 128 shuffle=true seed=epoch) (call fmt "
            "\"epoch {}\" epoch)) {(let (l _) (run (tuple loss step) with b)); "
            "(call report loss=l)})})");
  EXPECT_EQ(SpanText(stmts[14]->span), "18:1-23:1");
}

// Every script the grammar test must parse parses here too, and every one it
// must reject gives errors.
TEST(ParserTest, GrammarTestScripts) {
  namespace fs = std::filesystem;
  const fs::path root = RUNNEL_SOURCE_DIR;
  int checked = 0;
  for (const char* dir : {"tests/grammar", "examples", "stdlib"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (entry.path().extension() != ".rnl") continue;
      auto file = SourceFile::Read(entry.path().string());
      ASSERT_TRUE(file.ok()) << file.status();
      ParseResult r = Parse(**file);
      const bool expect_errors =
          entry.path().parent_path().filename() == "errors";
      if (expect_errors) {
        EXPECT_THAT(r.errors, Not(IsEmpty())) << entry.path();
      } else {
        EXPECT_THAT(r.errors, IsEmpty()) << entry.path() << "\n"
                                         << Render(r.errors);
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// ---------------------------------------------------------------------------
// Syntax errors (docs/language.md §7)

TEST(SyntaxErrorTest, ExpectedExpression) {
  EXPECT_THAT(Errors("let a = 1 +"),
              ElementsAre("1:12: expected an expression after '+'"));
  EXPECT_THAT(Errors("let a = 1 + )"),
              ElementsAre("1:13: expected an expression after '+'"));
  EXPECT_THAT(Errors("let a =\n"),
              ElementsAre("1:8: expected an expression after '='"));
  EXPECT_THAT(Errors("let a = 1 +\nlet b = 2"),
              ElementsAre("1:12: expected an expression after '+'"));
  EXPECT_THAT(Errors("print(1 *)"),
              ElementsAre("1:10: expected an expression after '*'"));
  EXPECT_THAT(Errors("let d = = 3"),
              ElementsAre("1:9: expected an expression after '='"));
}

TEST(SyntaxErrorTest, UnclosedBracketHasANote) {
  ParseResult r = Parse(SourceFile("t.rnl", "\nlet l = f(a, b\n"));
  ASSERT_EQ(r.errors.size(), 1u) << Render(r.errors);
  const Diagnostic& d = r.errors[0];
  EXPECT_EQ(d.message, "expected ')' to close '(' opened at 2:10");
  EXPECT_EQ(SpanText(d.span), "2:15-2:15");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].severity, Severity::kNote);
  EXPECT_EQ(d.notes[0].message, "'(' opened here");
  EXPECT_EQ(SpanText(d.notes[0].span), "2:10-2:10");

  EXPECT_THAT(Errors("let l = [1, 2"),
              ElementsAre("1:14: expected ']' to close '[' opened at 1:9"));
  EXPECT_THAT(Errors("def f(x) {\n  x\n"),
              ElementsAre("2:4: expected '}' to close '{' opened at 1:10"));
  EXPECT_THAT(Errors("let a = f(1, 2]"),
              ElementsAre("1:15: mismatched ']': expected ')' to close '(' "
                          "opened at 1:10"));
}

TEST(SyntaxErrorTest, Unexpected) {
  EXPECT_THAT(Errors("}"), ElementsAre("1:1: unexpected '}'"));
  EXPECT_THAT(Errors("let a = 1\n)\nlet b = 2"),
              ElementsAre("2:1: unexpected ')'"));
  EXPECT_THAT(Errors("let a = f(1 2)"),
              ElementsAre("1:13: expected ',' or ')' before '2'"));
  EXPECT_THAT(Errors("let h = nn.dense(x 128)"),
              ElementsAre("1:20: expected ',' or ')' before '128'"));
  EXPECT_THAT(Errors("let r = {x: 1 y: 2}"),
              ElementsAre("1:15: expected ',' or '}' before 'y'"));
}

TEST(SyntaxErrorTest, MissingTokens) {
  EXPECT_THAT(Errors("let a 1"),
              ElementsAre("1:6: missing '=' in let statement"));
  EXPECT_THAT(Errors("input x\n"),
              ElementsAre("1:8: missing ':' in input declaration"));
  EXPECT_THAT(Errors("var w: f32[10]\n"),
              ElementsAre("1:15: missing '=' in var declaration"));
  EXPECT_THAT(Errors("import \"lib/x.rnl\"\n"),
              ElementsAre("1:19: missing 'as' in file import"));
  EXPECT_THAT(Errors("for i 0..3 { }"),
              ElementsAre("1:6: missing 'in' in for statement"));
  EXPECT_THAT(Errors("def f(x) x * 2"),
              ElementsAre("1:10: unexpected 'x'; expected '=' or '{'"));
}

TEST(SyntaxErrorTest, CommaSeparatedLists) {
  EXPECT_THAT(Errors("def f(a b) = a"),
              ElementsAre("1:9: expected ',' or ')' before 'b'"));
  EXPECT_THAT(Errors("let t = (1 2)"),
              ElementsAre("1:12: expected ',' or ')' before '2'"));
  EXPECT_THAT(Errors("let l = [1 2]"),
              ElementsAre("1:12: expected ',' or ']' before '2'"));
  EXPECT_THAT(Errors("let t = (1,, 2)"),
              ElementsAre("1:12: expected an expression after ','"));
  EXPECT_THAT(Errors("f(a = 1 2)"),
              ElementsAre("1:9: expected ',' or ')' before '2'"));
}

TEST(SyntaxErrorTest, UnclosedBracketEndsBeforeAStatement) {
  EXPECT_THAT(Errors("let b = f(1, 2\nlet c = 3 +\nlet d = [4\nreturn d"),
              ElementsAre("1:15: expected ')' to close '(' opened at 1:10",
                          "2:12: expected an expression after '+'",
                          "3:11: expected ']' to close '[' opened at 3:9"));
  EXPECT_THAT(Errors("def f(x) {\n  let y = g(x, [1, 2\n  let z = 3 +\n}\n"),
              ElementsAre("2:21: expected ']' to close '[' opened at 2:16",
                          "3:14: expected an expression after '+'"));
  ParseResult r =
      Parse(SourceFile("t.rnl", "let a = f(g(1\nprint(a)\nvar w = 2\n"));
  ASSERT_EQ(r.errors.size(), 1u) << Render(r.errors);
  EXPECT_EQ(r.errors[0].message, "expected ')' to close '(' opened at 1:12");
  ASSERT_EQ(r.program->stmts.size(), 2u);
  EXPECT_EQ(DumpStmt(r.program->stmts[1].get()), "(var w 2)");
  // Keywords that are names there, and a loop's `for`, do not end anything.
  EXPECT_THAT(Errors("let t = f(\n  scope = \"x\",\n  device = 2)"), IsEmpty());
  EXPECT_THAT(Errors("let r = (loop x = 0\n  for i in 0..3 { x + i })"),
              IsEmpty());
}

TEST(SyntaxErrorTest, OneErrorPerStatement) {
  // Recovery inside the brackets resumes there; what it stumbles over in
  // the rest of the statement is a consequence.
  EXPECT_THAT(Errors("assert((1 + 2 } ) * 3 == 9, \"sum\")"),
              ElementsAre("1:15: mismatched '}': expected ')' to close '(' "
                          "opened at 1:8"));
  EXPECT_THAT(Errors("f(g(1 2), 3) + )\nlet b = (1 +)"),
              ElementsAre("1:7: expected ',' or ')' before '2'",
                          "2:13: expected an expression after '+'"));
  // The statements of a block are others, though no line break ended the
  // header before them.
  EXPECT_THAT(Errors("def f(a b) {\n  let x = 1 +\n  let y = )\n}"),
              ElementsAre("1:9: expected ',' or ')' before 'b'",
                          "2:14: expected an expression after '+'",
                          "3:11: expected an expression after '='"));
  EXPECT_THAT(Errors("f(1 2); g(3 4)"),
              ElementsAre("1:5: expected ',' or ')' before '2'",
                          "1:13: expected ',' or ')' before '4'"));
}

TEST(SyntaxErrorTest, StatementSeparators) {
  EXPECT_THAT(Errors("let a = 1 let b = 2"),
              ElementsAre("1:11: expected a newline or ';' before 'let'"));
  EXPECT_THAT(Errors("if a { b c }"),
              ElementsAre("1:10: expected a newline or ';' before 'c'"));
  EXPECT_THAT(
      Errors("let x = a\n    + b"),
      ElementsAre("2:5: unexpected '+' at the start of a line; to continue a "
                  "statement on the next line, end this line with the "
                  "operator"));
  EXPECT_THAT(Errors("if a { b }\nelse { c }"),
              ElementsAre("2:1: 'else' must be on the same line as the '}' "
                          "that closes the 'if' block"));
}

TEST(SyntaxErrorTest, Hints) {
  EXPECT_THAT(Errors("let scope = 1"),
              ElementsAre("1:5: 'scope' is a keyword and cannot be a name"));
  EXPECT_THAT(Errors("let y = 1 + if c { 1 } else { 2 }"),
              ElementsAre("1:13: an 'if' expression must be in parentheses "
                          "when it is an operand"));
  EXPECT_THAT(Errors("let f = 1.\n"),
              ElementsAre("1:11: expected a name after '.'; write '1.0' for "
                          "a floating-point number"));
}

TEST(SyntaxErrorTest, MoreMessages) {
  EXPECT_THAT(Errors("let y = x[1:2:3:4]"),
              ElementsAre("1:16: expected ',' or ']' before ':'"));
  EXPECT_THAT(Errors("print(x,,y)"),
              ElementsAre("1:9: expected an expression after ','"));
  EXPECT_THAT(Errors("if x { a } else print(b)"),
              ElementsAre("1:17: unexpected 'print'; expected 'if' or '{'"));
  EXPECT_THAT(Errors("input x: [3]"),
              ElementsAre("1:10: unexpected '['; expected a dtype such as "
                          "f32"));
  EXPECT_THAT(Errors("fn x => x"),
              ElementsAre("1:3: missing '(' in fn expression"));
  EXPECT_THAT(Errors("let x = a ? b : c"),
              ElementsAre("1:11: unexpected '?': for a conditional value "
                          "write 'if c { a } else { b }'"));
  EXPECT_THAT(Errors("let a = f(1 +, 2)"),
              ElementsAre("1:14: expected an expression after '+'"));
  EXPECT_THAT(Errors("import"),
              ElementsAre("1:7: expected a name or a string after 'import'"));
  EXPECT_THAT(Errors("run"),
              ElementsAre("1:4: expected an expression after 'run'"));
  EXPECT_THAT(Errors("a."), ElementsAre("1:3: expected a name after '.'"));
}

TEST(SyntaxErrorTest, LexicalErrors) {
  EXPECT_THAT(Errors("let a = $b"),
              ElementsAre("1:9: unexpected character '$'"));
  EXPECT_THAT(Errors("let a = 1 $$ 2"),
              ElementsAre("1:11: unexpected characters '$$'"));
  EXPECT_THAT(Errors("let a = !b"),
              ElementsAre("1:9: unexpected character '!'; write 'not' for "
                          "negation and '!=' for 'not equal'"));
  EXPECT_THAT(Errors("let a = 'x'"),
              ElementsAre(HasSubstr("1:9: unexpected character '''; strings "
                                    "are written in double quotes"),
                          HasSubstr("1:11: unexpected character '''")));
  EXPECT_THAT(Errors("let a = b → c"),
              ElementsAre("1:11: unexpected character '→' (U+2192)"));
  EXPECT_THAT(Errors("let a = \x01"),
              ElementsAre("1:9: unexpected character U+0001"));
}

TEST(SyntaxErrorTest, StringErrors) {
  ParseResult r = Parse(SourceFile("t.rnl", "let s = \"abc\nprint(s)\n"));
  ASSERT_EQ(r.errors.size(), 1u) << Render(r.errors);
  EXPECT_EQ(r.errors[0].message,
            "unterminated string: a string must end with '\"' on the line "
            "where it starts");
  EXPECT_EQ(SpanText(r.errors[0].span), "1:9-1:12");
  // The rest parses as if the string had been closed.
  ASSERT_EQ(r.program->stmts.size(), 2u);
  EXPECT_EQ(DumpStmt(r.program->stmts[1].get()), "(call print s)");

  EXPECT_THAT(Errors(R"(let s = "a\qb")"),
              ElementsAre(R"(1:11: unknown escape sequence '\q' in string; )"
                          R"(the escapes are \n \t \\ \")"));
}

TEST(SyntaxErrorTest, InvalidUtf8) {
  EXPECT_THAT(Errors("let a = 1\nlet \xff = 2"),
              ElementsAre("2:5: invalid UTF-8 (byte 0xFF): scripts must be "
                          "UTF-8 text"));
}

TEST(SyntaxErrorTest, SeveralErrorsInOneRun) {
  constexpr char kScript[] = R"(import nn
let a = 1 +
let b = f(1, 2
print(b)
)";
  // An unclosed bracket takes the following lines with it, up to one that
  // starts a statement (`let`, `def`, ...); the others recover at the end of
  // their statement.
  EXPECT_THAT(Errors(kScript),
              ElementsAre("2:12: expected an expression after '+'",
                          "3:15: expected ')' to close '(' opened at 3:10"));

  constexpr char kMany[] = R"(let a = 1 +
let b = 2
def f(x) {
  let c = (x *)
  c
  let = 3
}
let d = $
let e = 1 2
}
var w: f32[10]
print("done")
)";
  EXPECT_THAT(Errors(kMany),
              ElementsAre("1:12: expected an expression after '+'",
                          "4:15: expected an expression after '*'",
                          "6:7: unexpected '='; expected a name or '('",
                          "8:9: unexpected character '$'",
                          "9:11: expected a newline or ';' before '2'",
                          "10:1: unexpected '}'",
                          "11:15: missing '=' in var declaration"));
}

TEST(SyntaxErrorTest, ErrorsRender) {
  auto file =
      std::make_shared<SourceFile>("model.rnl", "let x = 1\nlet y = (x +\n");
  ParseResult r = Parse(*file);
  ASSERT_EQ(r.errors.size(), 1u);
  std::FILE* null_out = std::fopen("/dev/null", "w");
  DiagnosticSink sink(null_out);
  sink.AddSource(file);
  EXPECT_EQ(sink.Render(r.errors[0]),
            "model.rnl:2:13: error: expected an expression after '+'\n"
            "    2 | let y = (x +\n"
            "      |             ^\n");
  std::fclose(null_out);
}

TEST(SyntaxErrorTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep =
      "let a = " + std::string(500, '(') + "1" + std::string(500, ')');
  EXPECT_THAT(Errors(deep), ElementsAre(HasSubstr("nested more than 100")));
  std::string shallow =
      "let a = " + std::string(60, '[') + "1" + std::string(60, ']');
  EXPECT_THAT(Errors(shallow), IsEmpty());
  EXPECT_THAT(Errors("let a = " + std::string(100000, '-') + "x"),
              ElementsAre(HasSubstr("'-' and 'not' operators in a row")));
  std::string chain = "let a = 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_THAT(Errors(chain), IsEmpty());
  std::string logic = "let a = x";
  for (int i = 0; i < 5000; ++i) logic += " and x or y";
  EXPECT_THAT(Errors(logic), IsEmpty());
  std::string postfix = "let a = x";
  for (int i = 0; i < 5000; ++i) postfix += ".m(1)[0]";
  EXPECT_THAT(Errors(postfix), IsEmpty());
}

// From 32 KB on, the lexer runs on a thread of its own, ahead of the parser:
// the same tree, the same errors, the same nesting limits.
TEST(SyntaxErrorTest, LargeFilesParseTheSame) {
  std::string padding;
  for (int i = 0; i < 2000; ++i) padding += StrCat("let a", i, " =  ", i, "\n");
  ASSERT_GT(padding.size(), 32u * 1024);
  const std::string tail = "let b = (1 +\nlet c = [1, 2\nlet d = 1 $ 2\n";
  EXPECT_THAT(Errors(tail),
              ElementsAre("1:13: expected an expression after '+'",
                          "2:14: expected ']' to close '[' opened at 2:9",
                          "3:11: unexpected character '$'"));
  EXPECT_THAT(Errors(padding + tail),
              ElementsAre("2001:13: expected an expression after '+'",
                          "2002:14: expected ']' to close '[' opened at 2002:9",
                          "2003:11: unexpected character '$'"));

  ParseResult r =
      Parse(SourceFile("big.rnl", padding + "let z = (a1 + 2) * 3"));
  EXPECT_THAT(r.errors, IsEmpty());
  ASSERT_EQ(r.program->stmts.size(), 2001u);
  EXPECT_EQ(DumpStmt(r.program->stmts[1].get()), "(let a1 1)");
  EXPECT_EQ(DumpStmt(r.program->stmts[2000].get()), "(let z (* (+ a1 2) 3))");
  EXPECT_EQ(r.program->stmts[2000]->span.line, 2001);

  EXPECT_THAT(Errors(padding + "let x = " + std::string(500, '[') + "1"),
              ElementsAre("2001:109: brackets nested more than 100 deep; "
                          "split the expression up"));
}

// ---------------------------------------------------------------------------
// Parse handing statements out as it goes (runnel check)

struct Handed {
  std::vector<const Stmt*> stmts;
  std::vector<bool> imports;
};

ParseResult ParseHanding(const std::string& text, Handed* handed) {
  return Parse(SourceFile("test.rnl", text),
               [handed](const Stmt& s, bool imports) {
                 handed->stmts.push_back(&s);
                 handed->imports.push_back(imports);
               });
}

std::vector<std::string> Dump(const ParseResult& r) {
  std::vector<std::string> out;
  for (const StmtPtr& s : r.program->stmts) out.push_back(DumpStmt(s.get()));
  for (const Diagnostic& d : r.errors) {
    out.push_back(StrCat(d.span.line, ":", d.span.col, ": ", d.message));
  }
  return out;
}

TEST(StreamingParseTest, HandsOutEveryStatementOfTheProgramInOrder) {
  const std::string text =
      "let a = 1\n"
      "def f(x) {\n  import nn\n  x\n}\n"
      "import \"lib.rnl\" as l; let b = a + 2\n"
      "var w = zeros([2])\n";
  Handed handed;
  ParseResult r = ParseHanding(text, &handed);
  ASSERT_THAT(r.errors, IsEmpty());
  ASSERT_EQ(r.program->stmts.size(), 5u);
  ASSERT_EQ(handed.stmts.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(handed.stmts[i], r.program->stmts[i].get()) << i;
  }
  EXPECT_THAT(handed.imports, ElementsAre(false, true, true, false, false));
  EXPECT_EQ(Dump(r), Dump(Parse(SourceFile("test.rnl", text))));
}

TEST(StreamingParseTest, LargeFilesAreHandedOutWhole) {
  std::string text;
  for (int i = 0; i < 3000; ++i) text += StrCat("let a", i, " = ", i, " * 2\n");
  ASSERT_GT(text.size(), 32u * 1024);
  Handed handed;
  ParseResult r = ParseHanding(text, &handed);
  ASSERT_THAT(r.errors, IsEmpty());
  ASSERT_EQ(handed.stmts.size(), 3000u);
  EXPECT_EQ(handed.stmts.back(), r.program->stmts.back().get());
  EXPECT_EQ(Dump(r), Dump(Parse(SourceFile("test.rnl", text))));
}

// Whatever the error, the result is the one Parse without a callback gives,
// and nothing from the error on was handed out.
TEST(StreamingParseTest, ErrorsGiveTheResultOfAParseWithoutStreaming) {
  const std::string good = "let a = 1\nlet b = a * 2\n";
  for (const std::string& bad : std::vector<std::string>{
           "let c = (1 +\nlet d = 2\n",       // syntax
           "let c = 1 $ 2\nlet d = 2\n",      // lexical
           "let c = 99999999999999999999\n",  // the builder's own
           "f(x) = 3\nlet d = 2\n",           // the builder's, on a pattern
           "let c = " + std::string(150, '(') + "1\n",  // too deep
           "let s = \"abc\nlet d = 2\n",                // unterminated string
       }) {
    Handed handed;
    ParseResult r = ParseHanding(good + bad, &handed);
    EXPECT_THAT(r.errors, Not(IsEmpty())) << bad;
    EXPECT_EQ(Dump(r), Dump(Parse(SourceFile("test.rnl", good + bad)))) << bad;
    EXPECT_LE(handed.stmts.size(), 2u) << bad;
    for (const Stmt* s : handed.stmts) EXPECT_LE(s->span.line, 2) << bad;
  }
}

// ---------------------------------------------------------------------------
// IsIncomplete, for the REPL

TEST(IsIncompleteTest, OpenConstructsAreIncomplete) {
  EXPECT_TRUE(IsIncomplete("def f(x) {"));
  EXPECT_TRUE(IsIncomplete("def f(x) {\n  let y = x\n"));
  EXPECT_TRUE(IsIncomplete("let a = 1 +"));
  EXPECT_TRUE(IsIncomplete("let a = 1 +  # more below\n"));
  EXPECT_TRUE(IsIncomplete("foo(1,"));
  EXPECT_TRUE(IsIncomplete("let x ="));
  EXPECT_TRUE(IsIncomplete("let l = [1, 2"));
  EXPECT_TRUE(IsIncomplete("let f = fn(x) =>"));
  EXPECT_TRUE(IsIncomplete("let r = {"));
  EXPECT_TRUE(IsIncomplete("let c = a and"));
}

TEST(IsIncompleteTest, CompleteInputIsNot) {
  EXPECT_FALSE(IsIncomplete("let a = 1"));
  EXPECT_FALSE(IsIncomplete("let a = 1\n"));
  EXPECT_FALSE(IsIncomplete("def f(x) {\n  x\n}"));
  EXPECT_FALSE(IsIncomplete(""));
  EXPECT_FALSE(IsIncomplete("# just a comment"));
  EXPECT_FALSE(IsIncomplete("let a = f(1))"));  // an error, not more input
  EXPECT_FALSE(IsIncomplete("let s = \"abc"));  // unterminated: an error
  EXPECT_FALSE(IsIncomplete("x.shape"));
}

}  // namespace
}  // namespace runnel::lang
