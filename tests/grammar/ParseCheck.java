// Checks grammar/Runnel.g4 through its Java target (built by parse_test.sh).
//
//   ParseCheck FILE...                  every file parses without an error
//   ParseCheck --expect-errors FILE...  every file has at least one error
//   ParseCheck --trees FILE             each case of FILE parses to its tree
//   ParseCheck --tree FILE              prints FILE's compact tree
//   ParseCheck --tokens FILE            prints every token, hidden ones too
//
// A compact tree leaves out rule nodes with a single child, so
// `a + b * c` prints as (additive a + (multiplicative b * c)); a statement
// separator prints as \n or ;. Exit status 0 when every check passes.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import org.antlr.v4.runtime.BaseErrorListener;
import org.antlr.v4.runtime.CharStream;
import org.antlr.v4.runtime.CharStreams;
import org.antlr.v4.runtime.CommonTokenStream;
import org.antlr.v4.runtime.ParserRuleContext;
import org.antlr.v4.runtime.RecognitionException;
import org.antlr.v4.runtime.Recognizer;
import org.antlr.v4.runtime.Token;
import org.antlr.v4.runtime.tree.ParseTree;
import org.antlr.v4.runtime.tree.TerminalNode;

public class ParseCheck {
  static final class Errors extends BaseErrorListener {
    final String source;
    final List<String> messages = new ArrayList<>();

    Errors(String source) { this.source = source; }

    @Override
    public void syntaxError(Recognizer<?, ?> recognizer, Object offendingSymbol, int line,
                            int col, String msg, RecognitionException e) {
      messages.add(source + ":" + line + ":" + (col + 1) + ": error: " + msg);
    }
  }

  static final class Parsed {
    final ParseTree tree;
    final Errors errors;

    Parsed(ParseTree tree, Errors errors) {
      this.tree = tree;
      this.errors = errors;
    }
  }

  static Parsed parse(CharStream input, String source) {
    Errors errors = new Errors(source);
    RunnelLexer lexer = new RunnelLexer(input);
    lexer.removeErrorListeners();
    lexer.addErrorListener(errors);
    RunnelParser parser = new RunnelParser(new CommonTokenStream(lexer));
    parser.removeErrorListeners();
    parser.addErrorListener(errors);
    ParseTree tree = parser.program();
    return new Parsed(tree, errors);
  }

  static String compact(ParseTree t) {
    if (t instanceof TerminalNode) {
      Token token = ((TerminalNode) t).getSymbol();
      if (token.getType() == Token.EOF) return "";
      if (token.getType() == RunnelLexer.NEWLINE) return "\\n";
      return token.getText();
    }
    if (t.getChildCount() == 1 && !(t instanceof RunnelParser.ProgramContext)) {
      return compact(t.getChild(0));
    }
    String name = t.getClass().getSimpleName().replaceAll("Context$", "");
    StringBuilder out = new StringBuilder("(");
    out.append(Character.toLowerCase(name.charAt(0))).append(name.substring(1));
    for (int i = 0; i < t.getChildCount(); i++) {
      String child = compact(t.getChild(i));
      if (!child.isEmpty()) out.append(' ').append(child);
    }
    return out.append(')').toString();
  }

  static String read(String path) throws IOException {
    return new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
  }

  static String escape(String s) {
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r").replace("\n", "\\n");
  }

  // Cases are separated by blank lines: the source lines, then `=> TREE`.
  // Lines starting with `#` before a case are comments.
  static int checkTrees(String path) throws IOException {
    int failures = 0, cases = 0;
    String[] blocks = read(path).split("\n\\s*\n");
    for (String block : blocks) {
      StringBuilder source = new StringBuilder();
      String expected = null;
      int firstLine = -1;
      for (String line : block.split("\n")) {
        if (line.startsWith("=> ")) {
          expected = line.substring(3).trim();
        } else if (source.length() == 0 && line.startsWith("#")) {
          continue;
        } else {
          source.append(line).append('\n');
        }
      }
      if (source.length() == 0 && expected == null) continue;
      cases++;
      String text = source.toString().replaceAll("\n$", "");
      if (expected == null) {
        System.out.println(path + ": case without `=> TREE`:\n" + text);
        failures++;
        continue;
      }
      Parsed parsed = parse(CharStreams.fromString(text, path), path);
      String actual = compact(parsed.tree);
      if (!parsed.errors.messages.isEmpty() || !actual.equals(expected)) {
        failures++;
        System.out.println("FAIL " + escape(text));
        for (String m : parsed.errors.messages) System.out.println("  " + m);
        System.out.println("  expected: " + expected);
        System.out.println("  actual:   " + actual);
      }
    }
    System.out.println(path + ": " + (cases - failures) + "/" + cases + " trees match");
    return failures;
  }

  public static void main(String[] args) throws IOException {
    if (args.length == 0) {
      System.err.println("usage: ParseCheck [--expect-errors|--trees|--tree|--tokens] FILE...");
      System.exit(2);
    }
    String mode = args[0].startsWith("--") ? args[0] : "";
    int first = mode.isEmpty() ? 0 : 1;
    int failures = 0;
    for (int i = first; i < args.length; i++) {
      String path = args[i];
      switch (mode) {
        case "--trees":
          failures += checkTrees(path);
          break;
        case "--tree": {
          Parsed parsed = parse(CharStreams.fromFileName(path), path);
          for (String m : parsed.errors.messages) System.err.println(m);
          System.out.println(compact(parsed.tree));
          failures += parsed.errors.messages.size();
          break;
        }
        case "--tokens": {
          RunnelLexer lexer = new RunnelLexer(CharStreams.fromFileName(path));
          Errors errors = new Errors(path);
          lexer.removeErrorListeners();
          lexer.addErrorListener(errors);
          for (Token t = lexer.nextToken(); t.getType() != Token.EOF; t = lexer.nextToken()) {
            System.out.println(t.getLine() + "\t" + (t.getCharPositionInLine() + 1) + "\t"
                + RunnelLexer.VOCABULARY.getSymbolicName(t.getType()) + "\t"
                + escape(t.getText()));
          }
          for (String m : errors.messages) System.err.println(m);
          failures += errors.messages.size();
          break;
        }
        case "--expect-errors": {
          Parsed parsed = parse(CharStreams.fromFileName(path), path);
          if (parsed.errors.messages.isEmpty()) {
            System.out.println(path + ": parsed, but should have a syntax error");
            failures++;
          } else {
            System.out.println(path + ": rejected as expected: " + parsed.errors.messages.get(0));
          }
          break;
        }
        case "": {
          Parsed parsed = parse(CharStreams.fromFileName(path), path);
          for (String m : parsed.errors.messages) System.out.println(m);
          if (parsed.errors.messages.isEmpty()) System.out.println(path + ": ok");
          failures += parsed.errors.messages.size();
          break;
        }
        default:
          System.err.println("unknown option " + mode);
          System.exit(2);
      }
    }
    System.exit(failures == 0 ? 0 : 1);
  }
}
