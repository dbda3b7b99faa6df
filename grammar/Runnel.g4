// The grammar of the Runnel language (docs/language.md §2-§5).
//
// One combined grammar: the interpreter generates its C++ lexer and parser
// from it in the build directory
//   antlr4 -Dlanguage=Cpp -visitor -no-listener -o <build>/grammar Runnel.g4
// and tests/grammar/parse_test.sh checks it with the Java target.
//
// Statement ends. NEWLINE tokens reach the parser only where they end a
// statement. The lexer decides, with the members below:
//   - inside ( ) and [ ] a newline never ends a statement; inside { } (blocks
//     and records) it does, so `f(fn(x) { a \n b })` keeps the newline
//     between `a` and `b`. The lexer keeps the stack of open brackets.
//   - after a binary operator, `,`, `=`, `=>` or `{` a newline does not end a
//     statement: those tokens record where they end, and a newline starting
//     right there (with only spaces and a comment in between) is dropped.
// A NEWLINE token takes the spaces and comment before it and the blank and
// comment-only lines after it. A dropped one goes to the HIDDEN channel, as
// do spaces (WS) and a comment on the last line (COMMENT); so the two
// channels together cover the source exactly.
//
// The members and actions use only syntax that C++ and Java share, so the
// grammar carries no target-specific code, and there is no semantic
// predicate (one at the start of a token would keep ANTLR from caching the
// lexer's start state, making lexing ~40x slower). NEWLINE's first action
// runs with the input at the token's start; its last action also puts the
// input back at the token's end, which the C++ runtime (4.9) does not do
// after an action inside a rule: keep an action at the end of NEWLINE.
//
// A driver that wants to know whether input is complete (the REPL's `...`
// prompt) can ask the lexer after it reached EOF: `bracketDepth > 0` means
// an open bracket, `continuationEnd` equal to the index of the end of the
// input (less trailing spaces and comment) means it ended on a continuation
// token. Lex each input with a fresh lexer (these members are not reset).

grammar Runnel;

@lexer::members {
  // Open brackets, innermost in the lowest bit: 1 for ( and [, 0 for {.
  // The outermost 62 levels are kept; newlines deeper than that are dropped.
  long bracketBits = 0;
  int bracketDepth = 0;
  // Character index just past the last continuation token, -1 before any.
  long continuationEnd = -1;
  // Character index where the NEWLINE being lexed starts.
  long newlineStart = -1;

  void openBracket(int paren) {
    if (bracketDepth < 62) bracketBits = bracketBits * 2 + paren;
    bracketDepth = bracketDepth + 1;
  }
  void closeBracket() {
    if (bracketDepth > 0) {
      bracketDepth = bracketDepth - 1;
      if (bracketDepth < 62) bracketBits = bracketBits / 2;
    }
  }
  void continueLine() { continuationEnd = (long) getCharIndex(); }
  void startNewline() { newlineStart = (long) getCharIndex(); }
  void endNewline() {
    if (newlineStart == continuationEnd ||
        (bracketDepth > 0 && (bracketDepth > 62 || bracketBits % 2 == 1))) {
      setChannel(HIDDEN);
    }
  }
}

// ---------------------------------------------------------------------------
// Parser

// Statements separated by `sep`, each optional. Written so that every
// decision here needs one token of lookahead: a syntax error inside a
// statement is then reported and recovered from inside that statement, not
// by the loop (which would skip the rest of the file).
program
    : statement? (sep statement?)* EOF
    ;

sep
    : NEWLINE
    | SEMI
    ;

block
    : LBRACE statement? (sep statement?)* RBRACE
    ;

// `x = e` and `(a, b) = e` rebind names: the left side is parsed as an
// expression, so that the token after it decides, and lang/ast_builder.cc
// checks that it is a pattern. (An alternative `pattern ASSIGN expression`
// would make ANTLR look ahead over a whole expression at every statement.)
statement
    : LET pattern ASSIGN expression                                     # letStatement
    | VAR ID (COLON type)? ASSIGN expression                            # varStatement
    | STATE ID (COLON type)? ASSIGN expression                          # stateStatement
    | INPUT ID COLON type (ASSIGN expression)?                          # inputStatement
    | DEF ID LPAREN parameters? RPAREN (block | ASSIGN expression)      # defStatement
    | IMPORT ID (AS ID)?                                                # importModule
    | IMPORT STRING AS ID                                               # importFile
    | RETURN expression?                                                # returnStatement
    | BREAK                                                             # breakStatement
    | CONTINUE                                                          # continueStatement
    | FOR pattern IN expression block                                   # forStatement
    | SCOPE expression block                                            # scopeStatement
    | DEVICE expression block                                           # deviceStatement
    | AFTER expression block                                            # afterStatement
    | expression (ASSIGN expression)?                                   # expressionStatement
    ;

// `x`, `_`, `(a, (b, _))`
pattern
    : ID                                                                # namePattern
    | LPAREN pattern (COMMA pattern)* COMMA? RPAREN                     # tuplePattern
    ;

// `f32[?, 784]`, `i32[]`, `f32`: a dtype name, then the dimensions.
type
    : ID (LBRACK (dimension (COMMA dimension)* COMMA?)? RBRACK)?
    ;

dimension
    : QUESTION
    | expression
    ;

parameters
    : parameter (COMMA parameter)* COMMA?
    ;

parameter
    : ID (ASSIGN expression)?
    ;

// Loosest first (docs/language.md §5): `fn`, `if`, `loop` and `run`, the
// assignment operators, then the other operators in `logical` and
// `operation`.
//
// The assignment operators (`:=`, `+=`, ...) are expressions too:
// `let bump = (step += 1)`. Their left side may be any operand here, so that
// the token after it decides; lang/ast_builder.cc reports an operator
// expression there. They are not a level of `logical`: `a := b or c` would
// then also read as `(a := b) or c`, an ambiguity that ANTLR resolves only
// by full-context prediction at every `and` and `or`.
expression
    : FN LPAREN parameters? RPAREN (ARROW expression | block)           # lambdaExpression
    | ifExpression                                                      # conditionalExpression
    | LOOP pattern ASSIGN expression loopHead loopOption? block         # loopExpression
    | RUN expression (WITH expression)?                                 # runExpression
    | logical (op=(COLON_ASSIGN | PLUS_ASSIGN | MINUS_ASSIGN
                   | STAR_ASSIGN | SLASH_ASSIGN) expression)?           # operatorExpression
    ;

ifExpression
    : IF expression block (ELSE (block | ifExpression))?
    ;

loopHead
    : FOR pattern IN expression                                         # forLoopHead
    | WHILE expression                                                  # whileLoopHead
    ;

// `loop h = h0 for t in 0..n with checkpoint = 16 { ... }`: how a gradient
// through the loop keeps its values (docs/training.md, Long sequences).
loopOption
    : WITH ID ASSIGN expression
    ;

// The other operators. Each precedence level is an alternative of a
// left-recursive rule, tightest first (ANTLR gives earlier alternatives
// higher precedence), rather than a rule of its own: ANTLR then climbs the
// levels in a loop, and an operand costs a few rule invocations instead of
// one per level. Such a rule cannot say that comparisons and `..` do not
// associate: lang/ast_builder.cc reports `a < b < c` and `a..b..c`.
logical
    : NOT logical                                                       # negation
    | logical AND logical                                               # conjunction
    | logical OR logical                                                # disjunction
    | operation                                                         # operand
    ;

// `-x ** 2` is `-(x ** 2)`; `2 ** -1` is allowed; `a ** b ** c` is
// `a ** (b ** c)`. `not` is a level of `logical` so that `a * not b` is an
// error, as in Python. As in Python, `(a)` is `a` while `()`, `(a,)` and
// `(a, b)` are tuples: one alternative, so that the token after `(` decides.
operation
    : operation arguments                                               # callPostfix
    | operation LBRACK subscript (COMMA subscript)* COMMA? RBRACK       # indexPostfix
    | operation DOT name                                                # memberPostfix
    | <assoc=right> operation POW operation                             # power
    | MINUS operation                                                   # unary
    | operation op=(STAR | SLASH | DSLASH | PERCENT | AT) operation     # multiplicative
    | operation op=(PLUS | MINUS) operation                             # additive
    | operation DOTDOT operation                                        # range
    | operation op=(EQ | NE | LT | LE | GT | GE) operation              # comparison
    | INT                                                               # intLiteral
    | FLOAT                                                             # floatLiteral
    | STRING                                                            # stringLiteral
    | (TRUE | FALSE)                                                    # boolLiteral
    | NONE                                                              # noneLiteral
    | ID                                                                # nameReference
    | LPAREN (expression (COMMA (expression (COMMA expression)* COMMA?)?)?)? RPAREN  # parenthesized
    | LBRACK (expression (COMMA expression)* COMMA?)? RBRACK            # listLiteral
    | LBRACE (field (COMMA field)* COMMA?)? NEWLINE* RBRACE             # recordLiteral
    ;

// Positional arguments, then named ones; the interpreter reports a
// positional argument after a named one. The parentheses belong to the rule,
// so that at `f(a b)` the parser knows that ',' or ')' was due.
arguments
    : LPAREN (argument (COMMA argument)* COMMA?)? RPAREN
    ;

argument
    : name ASSIGN expression                                            # namedArgument
    | expression                                                        # positionalArgument
    ;

// `i`, `a:b`, `:`, `1:`, `::2`, `a:b:c`. Telling an index from a slice looks
// past the first expression: subscripts are short.
subscript
    : expression                                                        # indexSubscript
    | lo=expression? COLON hi=expression? (COLON step=expression?)?     # sliceSubscript
    ;

field
    : name COLON expression
    ;

// Where a name only labels something (a named argument, a member, a record
// field) keywords are names too: `trainable_vars(scope = "enc")`.
name
    : ID
    | LET | VAR | STATE | INPUT | DEF | FN | RETURN | IMPORT | AS | DEVICE
    | SCOPE | AFTER | IF | ELSE | LOOP | WHILE | FOR | IN | RUN | WITH
    | BREAK | CONTINUE | TRUE | FALSE | NONE | AND | OR | NOT
    ;

// ---------------------------------------------------------------------------
// Lexer

// Keywords (docs/language.md §2). Editors check their keyword lists against the
// rules of this form (editors/test/vocabulary.js).
LET      : 'let' ;
VAR      : 'var' ;
STATE    : 'state' ;
INPUT    : 'input' ;
DEF      : 'def' ;
FN       : 'fn' ;
RETURN   : 'return' ;
IMPORT   : 'import' ;
AS       : 'as' ;
DEVICE   : 'device' ;
SCOPE    : 'scope' ;
AFTER    : 'after' ;
IF       : 'if' ;
ELSE     : 'else' ;
LOOP     : 'loop' ;
WHILE    : 'while' ;
FOR      : 'for' ;
IN       : 'in' ;
RUN      : 'run' ;
WITH     : 'with' ;
BREAK    : 'break' ;
CONTINUE : 'continue' ;
TRUE     : 'true' ;
FALSE    : 'false' ;
NONE     : 'none' ;
AND      : 'and' { continueLine(); } ;
OR       : 'or' { continueLine(); } ;
NOT      : 'not' ;

// Operators. Those followed by { continueLine(); } let a statement go on
// on the next line.
POW          : '**' { continueLine(); } ;
STAR         : '*' { continueLine(); } ;
DSLASH       : '//' { continueLine(); } ;
SLASH        : '/' { continueLine(); } ;
PERCENT      : '%' { continueLine(); } ;
AT           : '@' { continueLine(); } ;
PLUS         : '+' { continueLine(); } ;
MINUS        : '-' { continueLine(); } ;
EQ           : '==' { continueLine(); } ;
NE           : '!=' { continueLine(); } ;
LE           : '<=' { continueLine(); } ;
LT           : '<' { continueLine(); } ;
GE           : '>=' { continueLine(); } ;
GT           : '>' { continueLine(); } ;
ARROW        : '=>' { continueLine(); } ;
ASSIGN       : '=' { continueLine(); } ;
COLON_ASSIGN : ':=' { continueLine(); } ;
PLUS_ASSIGN  : '+=' { continueLine(); } ;
MINUS_ASSIGN : '-=' { continueLine(); } ;
STAR_ASSIGN  : '*=' { continueLine(); } ;
SLASH_ASSIGN : '/=' { continueLine(); } ;
DOTDOT       : '..' { continueLine(); } ;
COMMA        : ',' { continueLine(); } ;
DOT          : '.' ;
COLON        : ':' ;
SEMI         : ';' ;
QUESTION     : '?' ;

LPAREN : '(' { openBracket(1); } ;
RPAREN : ')' { closeBracket(); } ;
LBRACK : '[' { openBracket(1); } ;
RBRACK : ']' { closeBracket(); } ;
LBRACE : '{' { openBracket(0); continueLine(); } ;
RBRACE : '}' { closeBracket(); } ;

// Literals. `1.` is not a float, so that `0..n` is a range.
FLOAT
    : DIGITS '.' DIGITS EXPONENT?
    | '.' DIGITS EXPONENT?
    | DIGITS EXPONENT
    ;

INT : DIGITS ;

STRING : '"' (ESCAPE | ~["\\\r\n])* '"' ;

ID : [A-Za-z_] [A-Za-z0-9_]* ;

// A newline, with the spaces and comment before it and the blank and
// comment-only lines after it; endNewline() hides it where it does not end
// a statement. The action at the end must stay: without it the C++ runtime
// (4.9) leaves the input at the token's start and lexes forever.
NEWLINE : { startNewline(); } LINE_END { endNewline(); } ;

// A comment on the last line, with no newline after it.
COMMENT : '#' ~[\r\n]* -> channel(HIDDEN) ;

WS : [ \t\f\r]+ -> channel(HIDDEN) ;

fragment LINE_END : ([ \t\f]* ('#' ~[\r\n]*)? '\r'? '\n')+ ;
fragment DIGITS   : [0-9] ('_'? [0-9])* ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
fragment ESCAPE   : '\\' [nt\\"] ;
