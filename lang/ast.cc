#include "lang/ast.h"

namespace runnel::lang {

const char* BinaryOpText(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
    case BinaryOp::kMatMul:
      return "@";
    case BinaryOp::kEq:
      return "==";
    case BinaryOp::kNe:
      return "!=";
    case BinaryOp::kLt:
      return "<";
    case BinaryOp::kLe:
      return "<=";
    case BinaryOp::kGt:
      return ">";
    case BinaryOp::kGe:
      return ">=";
    case BinaryOp::kAnd:
      return "and";
    case BinaryOp::kOr:
      return "or";
    case BinaryOp::kRange:
      return "..";
  }
  return "?";
}

const char* AssignOpText(AssignOp op) {
  switch (op) {
    case AssignOp::kAssign:
      return ":=";
    case AssignOp::kAdd:
      return "+=";
    case AssignOp::kSub:
      return "-=";
    case AssignOp::kMul:
      return "*=";
    case AssignOp::kDiv:
      return "/=";
  }
  return "?";
}

}  // namespace runnel::lang
