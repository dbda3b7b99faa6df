// A read-only walk over a parsed program: every expression, in source
// order, parents before children, in every statement and block (function,
// loop and branch bodies too). For checks that look at the whole script
// before it runs (which `--arg` names it reads).
#ifndef RUNNEL_LANG_AST_WALK_H_
#define RUNNEL_LANG_AST_WALK_H_

#include <functional>

#include "lang/ast.h"

namespace runnel::lang {

using ExprVisitor = std::function<void(const Expr&)>;

void WalkExprs(const Program& program, const ExprVisitor& visit);

}  // namespace runnel::lang

#endif  // RUNNEL_LANG_AST_WALK_H_
