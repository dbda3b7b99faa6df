// einsum(equation, a, b): numpy's and torch's Einstein summation over one
// or two operands, written as the ops a person would write for it, so its
// gradient is theirs and it runs wherever they do. One operand: a sum
// over the letters the output lacks, then a transpose. Two: each
// operand's own letters summed away, then one batched matmul: the letters
// both share and the output keeps are the batch, those both share and it
// drops are contracted, the rest are the rows and columns; the operands
// are transposed only when their axes are not already in a matmul's
// order (so "bhqd,bhkd->bhqk" is one matmul with transpose_b). A letter
// twice in one operand ("ii->i", "...ii->...i") first takes that
// operand's diagonal, one gather_nd of the two axes moved in front.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "interpreter/builtins/internal.h"
#include "interpreter/diag.h"
#include "interpreter/interpreter.h"

namespace runnel::interp {
namespace {

// An axis's label: a letter, or (negative) one of the dimensions an
// ellipsis stands for, counted from the right as numpy aligns them.
using Label = int;
using Labels = std::vector<Label>;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

bool Has(const Labels& l, Label x) {
  return std::find(l.begin(), l.end(), x) != l.end();
}

std::string Name(Label x) {
  return x >= 0 ? std::string(1, static_cast<char>(x)) : "...";
}

// One side's term: its letters, with "..." standing for `ellipsis` dims
// (as many as the operand's rank leaves; -1 when the term is the output).
absl::StatusOr<Labels> ParseTerm(const std::string& term, int rank,
                                 int* ellipsis) {
  Labels out;
  bool dots = false;
  int letters = 0;
  for (char ch : term)
    letters += std::isalpha(static_cast<unsigned char>(ch)) ? 1 : 0;
  for (size_t i = 0; i < term.size(); ++i) {
    const char ch = term[i];
    if (term.compare(i, 3, "...") == 0) {
      if (dots) return absl::InvalidArgumentError("'...' twice in one term");
      dots = true;
      i += 2;
      const int n = rank >= 0 ? rank - letters : *ellipsis;
      if (n < 0) break;  // the rank check below says so
      if (rank >= 0) *ellipsis = std::max(*ellipsis, n);
      for (int k = n; k >= 1; --k) out.push_back(-k);
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(ch))) {
      return absl::InvalidArgumentError(
          StrCat("'", std::string(1, ch), "' is not a letter"));
    }
    if (rank < 0 && Has(out, ch)) {
      return absl::InvalidArgumentError(StrCat(
          "output letter '", std::string(1, ch), "' twice in '", term, "'"));
    }
    out.push_back(ch);
  }
  if (rank >= 0 && static_cast<int>(out.size()) != rank) {
    return absl::InvalidArgumentError(
        StrCat("'", term, "' names ", dots ? "at least " : "", letters,
               " axes of an operand of rank ", rank));
  }
  return out;
}

absl::StatusOr<Equation> Parse(std::string eq, const std::vector<int>& ranks) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = absl::StrSplit(lhs, ',');
  if (terms.size() != ranks.size()) {
    return absl::InvalidArgumentError(StrCat("the equation has ", terms.size(),
                                             " operand term(s), given ",
                                             ranks.size(), " operand(s)"));
  }
  Equation e;
  int ellipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    RN_ASSIGN_OR_RETURN(Labels l, ParseTerm(terms[i], ranks[i], &ellipsis));
    e.inputs.push_back(std::move(l));
  }
  if (arrow != std::string::npos) {
    RN_ASSIGN_OR_RETURN(e.output,
                        ParseTerm(eq.substr(arrow + 2), -1, &ellipsis));
    for (Label x : e.output) {
      bool found = false;
      for (const Labels& in : e.inputs) found = found || Has(in, x);
      if (!found && x >= 0) {
        return absl::InvalidArgumentError(
            StrCat("output letter '", Name(x), "' is in no operand"));
      }
    }
    for (const Labels& in : e.inputs) {
      for (Label x : in) {
        if (x < 0 && !Has(e.output, x)) {
          return absl::InvalidArgumentError(
              "the operands have '...' and the output does not");
        }
      }
    }
  } else {
    // numpy's implicit output: the ellipsis, then the letters that appear
    // once, in alphabetical order.
    for (int k = ellipsis; k >= 1; --k) e.output.push_back(-k);
    std::map<Label, int> count;
    for (const Labels& in : e.inputs) {
      for (Label x : in) {
        if (x >= 0) ++count[x];
      }
    }
    for (const auto& [x, n] : count) {
      if (n == 1) e.output.push_back(x);
    }
  }
  return e;
}

// The dims of an operand of `shape`, after checking that a letter twice
// in its labels `l` names axes of one size known while building.
absl::StatusOr<std::vector<int64_t>> CheckDiagonals(const Labels& l,
                                                    const Shape& shape) {
  std::vector<int64_t> dims;
  for (int i = 0; i < shape.rank(); ++i) dims.push_back(shape.dim(i));
  for (size_t p = 0; p < l.size(); ++p) {
    for (size_t q = p + 1; q < l.size(); ++q) {
      if (l[p] != l[q]) continue;
      if (dims[p] < 0 || dims[q] < 0 || dims[p] != dims[q]) {
        auto size = [](int64_t d) { return d < 0 ? "?" : StrCat(d); };
        return absl::InvalidArgumentError(StrCat(
            "'", Name(l[p]), "' twice in an operand names axes of sizes ",
            size(dims[p]), " and ", size(dims[q]),
            ": a diagonal needs one size, known while building"));
      }
    }
  }
  return dims;
}

class Builder {
 public:
  Builder(Interpreter& in, Args& a) : in_(in), a_(a) {}

  Result Op(const std::string& op, std::vector<Value> inputs,
            AttrMap attrs = {}) {
    return in_.builder().ApplyOp(op, std::move(inputs), std::move(attrs),
                                 OpSite{a_.span, 0, ""});
  }

  // x's axes named `from` summed where `keep` lacks them.
  Result SumAway(Value x, Labels* from, const Labels& keep) {
    std::vector<int64_t> axes;
    Labels kept;
    for (size_t i = 0; i < from->size(); ++i) {
      if (Has(keep, (*from)[i])) {
        kept.push_back((*from)[i]);
      } else {
        axes.push_back(static_cast<int64_t>(i));
      }
    }
    *from = kept;
    if (axes.empty()) return x;
    return Op("sum", {std::move(x)}, {{"axis", axes}, {"keepdims", false}});
  }

  // x (axes `from`) with its axes in the order `to`.
  Result Arrange(Value x, const Labels& from, const Labels& to) {
    std::vector<int64_t> perm;
    for (Label l : to) {
      perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
    }
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int64_t(i);
    if (identity) return x;
    return Op("transpose", {std::move(x)}, {{"perm", perm}});
  }

  // From shape vector `s`: its dims [0, keep), then one dim the product
  // of [keep, mid), then one the product of [mid, rank).
  Result Merged(const Value& s, int keep, int mid, int rank) {
    std::vector<Value> parts;
    RN_ASSIGN_OR_RETURN(Value lead, Slice(s, 0, keep));
    parts.push_back(lead);
    for (auto [from, to] : {std::pair{keep, mid}, std::pair{mid, rank}}) {
      RN_ASSIGN_OR_RETURN(Value piece, Slice(s, from, to));
      RN_ASSIGN_OR_RETURN(
          Value p, Op("prod", {piece},
                      {{"axis", std::vector<int64_t>{0}}, {"keepdims", true}}));
      parts.push_back(p);
    }
    return Op("concat", parts, {{"axis", int64_t{0}}});
  }

  // x (axes `l`, sizes `dims`) with each letter `l` has twice replaced by
  // one axis in front, its diagonal: numpy's x[..., i, ..., i, ...] for
  // every i. CheckDiagonals has checked the sizes.
  Result Diagonals(Value x, Labels* l, std::vector<int64_t> dims) {
    for (;;) {
      size_t p = 0, q = 0;
      for (p = 0; p < l->size(); ++p) {
        q = std::find(l->begin() + p + 1, l->end(), (*l)[p]) - l->begin();
        if (q < l->size()) break;
      }
      if (p == l->size()) return x;
      const int64_t n = dims[p];
      std::vector<int64_t> perm = {static_cast<int64_t>(p),
                                   static_cast<int64_t>(q)};
      Labels rest = {(*l)[p]};
      std::vector<int64_t> rest_dims = {n};
      for (size_t i = 0; i < l->size(); ++i) {
        if (i == p || i == q) continue;
        perm.push_back(static_cast<int64_t>(i));
        rest.push_back((*l)[i]);
        rest_dims.push_back(dims[i]);
      }
      RN_ASSIGN_OR_RETURN(x, Op("transpose", {std::move(x)}, {{"perm", perm}}));
      Tensor at(DType::kI64, Shape{n, 2});
      for (int64_t i = 0; i < 2 * n; ++i) at.data<int64_t>()[i] = i / 2;
      RN_ASSIGN_OR_RETURN(
          x, Op("gather_nd", {std::move(x), Value::Concrete(std::move(at))}));
      *l = std::move(rest);
      dims = std::move(rest_dims);
    }
  }

  Result Slice(const Value& s, int from, int to) {
    return Op("strided_slice", {s},
              {{"begin", std::vector<int64_t>{from}},
               {"end", std::vector<int64_t>{to}},
               {"strides", std::vector<int64_t>{1}}});
  }

  Result Contract(Value a, Labels la, Value b, Labels lb, const Labels& out) {
    // Letters one operand has alone and the output drops: summed first.
    Labels keep_a = out, keep_b = out;
    keep_a.insert(keep_a.end(), lb.begin(), lb.end());
    keep_b.insert(keep_b.end(), la.begin(), la.end());
    RN_ASSIGN_OR_RETURN(a, SumAway(std::move(a), &la, keep_a));
    RN_ASSIGN_OR_RETURN(b, SumAway(std::move(b), &lb, keep_b));
    Labels batch, contract, rows, cols;
    for (Label x : out) {
      if (Has(la, x) && Has(lb, x)) batch.push_back(x);
    }
    for (Label x : la) {
      if (Has(lb, x) && !Has(out, x)) contract.push_back(x);
      if (!Has(lb, x)) rows.push_back(x);
    }
    for (Label x : lb) {
      if (!Has(la, x)) cols.push_back(x);
    }
    auto cat = [](std::initializer_list<const Labels*> parts) {
      Labels l;
      for (const Labels* p : parts) l.insert(l.end(), p->begin(), p->end());
      return l;
    };
    // a as [batch, rows, contract] (or, already so, [batch, contract,
    // rows] with transpose_a); b as [batch, contract, cols] or [batch,
    // cols, contract] with transpose_b.
    const bool ta = la == cat({&batch, &contract, &rows}) &&
                    la != cat({&batch, &rows, &contract});
    const bool tb = lb == cat({&batch, &cols, &contract}) &&
                    lb != cat({&batch, &contract, &cols});
    const Labels la2 = ta ? la : cat({&batch, &rows, &contract});
    const Labels lb2 = tb ? lb : cat({&batch, &contract, &cols});
    RN_ASSIGN_OR_RETURN(a, Arrange(std::move(a), la, la2));
    RN_ASSIGN_OR_RETURN(b, Arrange(std::move(b), lb, lb2));
    const int nb = static_cast<int>(batch.size());
    const int nr = static_cast<int>(rows.size());
    const int nk = static_cast<int>(contract.size());
    const int nc = static_cast<int>(cols.size());
    const bool merge_a = nr != 1 || nk != 1;
    const bool merge_b = nc != 1 || nk != 1;
    const Labels lab = cat({&batch, &rows, &cols});
    // Without a batch, a's rows may stay apart: matmul broadcasts b over
    // them ("bij,jk->bik" is one matmul).
    if ((!merge_a || (batch.empty() && !ta && nk == 1 && nr > 1)) && !merge_b) {
      RN_ASSIGN_OR_RETURN(
          Value ab,
          Op("matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}}));
      return Arrange(std::move(ab), lab, out);
    }
    // The rows' and the columns' dims, for the product's final shape.
    RN_ASSIGN_OR_RETURN(Value sa,
                        Op("shape_of", {a}, {{"out_type", DType::kI64}}));
    RN_ASSIGN_OR_RETURN(Value sb,
                        Op("shape_of", {b}, {{"out_type", DType::kI64}}));
    const int r0 = ta ? nb + nk : nb, c0 = tb ? nb : nb + nk;
    RN_ASSIGN_OR_RETURN(Value row_dims, Slice(sa, r0, r0 + nr));
    RN_ASSIGN_OR_RETURN(Value col_dims, Slice(sb, c0, c0 + nc));
    RN_ASSIGN_OR_RETURN(Value shape_a,
                        Merged(sa, nb, ta ? nb + nk : nb + nr, nb + nr + nk));
    RN_ASSIGN_OR_RETURN(Value shape_b,
                        Merged(sb, nb, tb ? nb + nc : nb + nk, nb + nk + nc));
    RN_ASSIGN_OR_RETURN(a, Op("reshape", {a, shape_a}));
    RN_ASSIGN_OR_RETURN(b, Op("reshape", {b, shape_b}));
    RN_ASSIGN_OR_RETURN(
        Value ab,
        Op("matmul", {a, b}, {{"transpose_a", ta}, {"transpose_b", tb}}));
    // Back to [batch, rows..., cols...]: the batch from the product (the
    // operands' batches broadcast).
    RN_ASSIGN_OR_RETURN(Value sab,
                        Op("shape_of", {ab}, {{"out_type", DType::kI64}}));
    RN_ASSIGN_OR_RETURN(Value lead, Slice(sab, 0, nb));
    RN_ASSIGN_OR_RETURN(Value shape, Op("concat", {lead, row_dims, col_dims},
                                        {{"axis", int64_t{0}}}));
    RN_ASSIGN_OR_RETURN(ab, Op("reshape", {ab, shape}));
    return Arrange(std::move(ab), lab, out);
  }

 private:
  Interpreter& in_;
  Args& a_;
};

// The static rank of a tensor value, or an error naming the operand.
absl::StatusOr<int> RankOf(const Value& v, const SourceSpan& span, int i) {
  const std::optional<TensorSpec> spec = SpecOf(v);
  if (!spec.has_value()) {
    return ErrorAt(span, StrCat("einsum: operand ", i + 1, " is not a tensor"));
  }
  if (spec->shape.unknown_rank()) {
    return ErrorAt(span, StrCat("einsum: operand ", i + 1,
                                " has an unknown rank; einsum needs it"));
  }
  return spec->shape.rank();
}

Result Einsum(Interpreter& in, Args& a) {
  RN_ASSIGN_OR_RETURN(std::string equation, StringArg(a, 0));
  std::vector<Value> operands;
  std::vector<int> ranks;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < a.rest.size(); ++i) {
    Value v = a.rest[i];
    if (!v.is_tensor()) {
      RN_ASSIGN_OR_RETURN(
          v, in.builder().ToTensor(v, a.rest_spans[i], "einsum: an operand"));
    }
    RN_ASSIGN_OR_RETURN(int r, RankOf(v, a.rest_spans[i], static_cast<int>(i)));
    shapes.push_back(SpecOf(v)->shape);
    operands.push_back(std::move(v));
    ranks.push_back(r);
  }
  if (operands.empty() || operands.size() > 2) {
    return ErrorAt(a.span, StrCat("einsum takes one or two operands, got ",
                                  operands.size()));
  }
  absl::StatusOr<Equation> e = Parse(equation, ranks);
  if (!e.ok()) {
    return ErrorAt(a.span_of(0),
                   StrCat("einsum: '", equation, "': ", e.status().message()));
  }
  Builder b(in, a);
  for (size_t i = 0; i < operands.size(); ++i) {
    absl::StatusOr<std::vector<int64_t>> dims =
        CheckDiagonals(e->inputs[i], shapes[i]);
    if (!dims.ok()) {
      return ErrorAt(a.span_of(0), StrCat("einsum: '", equation,
                                          "': ", dims.status().message()));
    }
    RN_ASSIGN_OR_RETURN(operands[i],
                        b.Diagonals(operands[i], &e->inputs[i], *dims));
  }
  if (operands.size() == 1) {
    Labels l = e->inputs[0];
    RN_ASSIGN_OR_RETURN(Value x, b.SumAway(operands[0], &l, e->output));
    return b.Arrange(std::move(x), l, e->output);
  }
  return b.Contract(operands[0], e->inputs[0], operands[1], e->inputs[1],
                    e->output);
}

}  // namespace

void AddEinsum(std::vector<Builtin>& b) {
  b.push_back({"einsum",
               {P("equation")},
               Einsum,
               /*variadic=*/true,
               /*kwargs=*/false,
               {"transpose", "reshape", "matmul", "sum", "shape_of",
                "strided_slice", "prod", "concat", "gather_nd"}});
}

}  // namespace runnel::interp
