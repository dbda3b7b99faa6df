// A libFuzzer target: the parser alone, many times faster per input than
// check_fuzzer.cc. Parses arbitrary bytes, renders every syntax error as
// `runnel` prints it (to /dev/null), and asks the REPL's question, whether
// the text is an incomplete statement.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "interpreter/large_stack.h"
#include "lang/diagnostics.h"
#include "lang/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::FILE* dev_null = std::fopen("/dev/null", "w");
  auto file = std::make_shared<runnel::lang::SourceFile>(
      "fuzz.rnl", std::string(reinterpret_cast<const char*>(data), size));
  // On a large stack, as `runnel` parses.
  runnel::interp::LargeStackThread([&] {
    (void)runnel::lang::IsIncomplete(file->text());
    runnel::lang::ParseResult result = runnel::lang::Parse(*file);
    runnel::lang::DiagnosticSink sink(dev_null);
    sink.AddSource(file);
    for (const runnel::lang::Diagnostic& d : result.errors) sink.Report(d);
  }).Join();
  return 0;
}
