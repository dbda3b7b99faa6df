"""Protocol tests of `runnel lsp` (cli/lsp), driven by pytest-lsp as an editor
would drive it: every feature of docs/editors.md, a file with syntax errors,
and malformed requests. Run by ctest (cli/CMakeLists.txt) with RUNNEL set to
the binary; the environment is build/venv/lsp (requirements/lsp.txt)."""

import json
import os
import pathlib
import subprocess
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

RUNNEL = os.environ["RUNNEL"]
HERE = pathlib.Path(__file__).resolve().parent
MODEL = HERE / "model.rnl"
MODEL_TEXT = MODEL.read_text()
MODEL_URI = MODEL.as_uri()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[RUNNEL, "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=types.ClientCapabilities(),
                               root_uri=HERE.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def open_doc(client, text, uri=MODEL_URI, version=1):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="runnel", version=version, text=text)))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    return client.diagnostics[uri]


def pos(text, needle, occurrence=0, offset=0):
    """The LSP position of the `occurrence`th `needle` in `text` (+offset)."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    return types.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))


async def hover(client, text, needle, occurrence=0, offset=0, uri=MODEL_URI):
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=pos(text, needle, occurrence, offset)))
    return h.contents.value if h else None


# ---- capabilities and diagnostics -------------------------------------------

@pytest.mark.asyncio
async def test_clean_file_has_no_diagnostics(client: LanguageClient):
    assert list(await open_doc(client, MODEL_TEXT)) == []


@pytest.mark.asyncio
async def test_shape_error_is_a_diagnostic_with_range(client: LanguageClient):
    text = MODEL_TEXT + "let bad = matmul(w, w)\n"
    diags = await open_doc(client, text)
    assert len(diags) == 1, diags
    d = diags[0]
    assert d.severity == types.DiagnosticSeverity.Error
    assert "matmul" in d.message and "784" in d.message and "256" in d.message
    line = text.count("\n", 0, text.index("matmul(w, w)"))
    assert d.range.start.line == line
    assert d.range.start.character >= len("let bad = ")


@pytest.mark.asyncio
async def test_incremental_changes_update_diagnostics(client: LanguageClient):
    assert list(await open_doc(client, MODEL_TEXT)) == []
    end = pos(MODEL_TEXT, "let loss")
    # Insert a line with an unknown name, then take it out again.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=MODEL_URI, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=end, end=end), text="let q = logitz + 1\n")]))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    diags = client.diagnostics[MODEL_URI]
    assert len(diags) == 1 and "logitz" in diags[0].message, diags
    assert "logits" in diags[0].message  # did you mean
    assert diags[0].range.start == types.Position(line=end.line, character=8)
    after = types.Position(line=end.line + 1, character=0)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=MODEL_URI, version=3),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=end, end=after), text="")]))
    await client.wait_for_notification("textDocument/publishDiagnostics")
    assert list(client.diagnostics[MODEL_URI]) == []


@pytest.mark.asyncio
async def test_notes_become_related_information(client: LanguageClient):
    # "matmul: inner dimensions differ", with "w declared here" notes.
    diags = await open_doc(client, MODEL_TEXT + "let bad = matmul(w, w)\n")
    assert len(diags) == 1, diags
    related = diags[0].related_information or []
    assert related, diags[0]
    assert related[0].location.uri == MODEL_URI
    assert related[0].message == "model/w declared here"  # the node's name
    assert related[0].location.range.start == pos(MODEL_TEXT, "var w")


@pytest.mark.asyncio
async def test_syntax_errors_keep_the_other_features(client: LanguageClient):
    text = MODEL_TEXT.replace("let loss = nn.cross_entropy(logits, y)",
                              "let loss = nn.cross_entropy(logits, \nlet z = x +")
    diags = await open_doc(client, text)
    assert diags and all(d.severity == types.DiagnosticSeverity.Error for d in diags)
    syms = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=MODEL_URI)))
    assert {"x", "y", "mlp", "model"} <= {s.name for s in syms}
    h = await hover(client, text, "input x", offset=6)
    assert "input x" in h
    d = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI),
        position=pos(text, "matmul(x", offset=7)))
    assert d.range.start.line == pos(text, "input x").line


# ---- hover ---------------------------------------------------------------------

@pytest.mark.asyncio
async def test_hover_shows_shapes(client: LanguageClient):
    await open_doc(client, MODEL_TEXT)
    assert "let h: f32[?, 256]" in await hover(client, MODEL_TEXT, "let h = matmul", offset=4)
    assert "input x: f32[?, 784]" in await hover(client, MODEL_TEXT, "input x", offset=6)
    assert "input y: i32[?]" in await hover(client, MODEL_TEXT, "input y", offset=6)
    w = await hover(client, MODEL_TEXT, "var w", offset=4)
    assert "var w: f32[784, 256] (trainable" in w, w
    # A use shows the value there; an expression shows its own type.
    assert "f32[?, 10]" in await hover(client, MODEL_TEXT, "logits, y")
    assert "f32[?, 256]" in await hover(client, MODEL_TEXT, "matmul(x, w)", offset=6)
    assert "let loss: f32[]\n" in await hover(client, MODEL_TEXT, "let loss", offset=4)


@pytest.mark.asyncio
async def test_hover_shows_signatures_and_docs(client: LanguageClient):
    await open_doc(client, MODEL_TEXT)
    h = await hover(client, MODEL_TEXT, "mlp(h", offset=1)
    assert "def mlp(features, hidden, classes = 10)" in h
    assert "Two dense layers" in h
    h = await hover(client, MODEL_TEXT, "nn.dense(features", offset=4)
    assert "def dense(x, units" in h and "fully connected" in h, h
    h = await hover(client, MODEL_TEXT, "matmul(x", offset=2)
    assert "matmul" in h and "(" in h
    h = await hover(client, MODEL_TEXT, "import nn", offset=8)
    assert "import nn" in h and "nn.rnl" in h


@pytest.mark.asyncio
async def test_hover_right_after_a_change_points_into_the_new_text(client: LanguageClient):
    # Hover may be answered from the check before the change, mapped through
    # it, while the change is checked: either way the range is in the new
    # text and the type is right.
    await open_doc(client, MODEL_TEXT)
    top = types.Position(line=0, character=0)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=MODEL_URI, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=top, end=top), text="# a new first line\n")]))
    text = "# a new first line\n" + MODEL_TEXT
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI),
        position=pos(text, "let h = matmul", offset=4)))
    assert "let h: f32[?, 256]" in h.contents.value
    assert h.range.start == pos(text, "h = matmul")
    await client.wait_for_notification("textDocument/publishDiagnostics")
    h = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI),
        position=pos(text, "let h = matmul", offset=4)))
    assert "being checked" not in h.contents.value
    assert h.range.start == pos(text, "h = matmul")


# ---- definition, references ------------------------------------------------------

@pytest.mark.asyncio
async def test_definition_and_references(client: LanguageClient):
    await open_doc(client, MODEL_TEXT)
    doc = types.TextDocumentIdentifier(uri=MODEL_URI)
    d = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=pos(MODEL_TEXT, "logits, y")))
    assert d.uri == MODEL_URI and d.range.start == pos(MODEL_TEXT, "logits =")
    d = await client.text_document_definition_async(types.DefinitionParams(
        text_document=doc, position=pos(MODEL_TEXT, "nn.dense(h", offset=4)))
    assert d.uri.endswith("/stdlib/nn.rnl"), d
    nn = pathlib.Path(d.uri[len("file://"):]).read_text().splitlines()
    assert nn[d.range.start.line].startswith("def dense(")
    # The parameter `h` inside mlp is not the scope's `h`.
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=pos(MODEL_TEXT, "let h = nn", offset=4),
        context=types.ReferenceContext(include_declaration=True)))
    assert [r.range.start for r in refs] == [pos(MODEL_TEXT, "h = nn"),
                                             pos(MODEL_TEXT, "h, classes")]
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=pos(MODEL_TEXT, "input x", offset=6),
        context=types.ReferenceContext(include_declaration=False)))
    assert [r.range.start for r in refs] == [pos(MODEL_TEXT, "x, w")]
    # A module's member and a builtin: their uses.
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=pos(MODEL_TEXT, "nn.dense(h", offset=4),
        context=types.ReferenceContext(include_declaration=False)))
    assert [r.range.start for r in refs] == [pos(MODEL_TEXT, "dense(features"),
                                             pos(MODEL_TEXT, "dense(h")]
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=doc, position=pos(MODEL_TEXT, "relu"),
        context=types.ReferenceContext(include_declaration=False)))
    assert [r.range.start for r in refs] == [pos(MODEL_TEXT, "relu")]


# ---- completion, signature help ---------------------------------------------------

async def complete(client, text, at):
    r = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI), position=at))
    items = r.items if hasattr(r, "items") else r
    return {i.label: i for i in items}


@pytest.mark.asyncio
async def test_completion(client: LanguageClient):
    text = MODEL_TEXT + "\n"
    await open_doc(client, text)
    end = types.Position(line=text.count("\n"), character=0)
    items = await complete(client, text, end)
    for name in ["x", "y", "mlp", "loss", "logits", "w", "nn", "let", "matmul", "f32"]:
        assert name in items, name
    assert "features" not in items  # mlp's parameter is not in scope here
    assert items["matmul"].kind == types.CompletionItemKind.Function
    assert items["let"].kind == types.CompletionItemKind.Keyword


@pytest.mark.asyncio
async def test_completion_of_module_members_and_keyword_arguments(client: LanguageClient):
    text = MODEL_TEXT + "let z = nn.de"
    await open_doc(client, text)
    items = await complete(client, text, pos(text, "nn.de", offset=5))
    assert "dense" in items and not any(k.startswith("_") for k in items), items.keys()
    text = MODEL_TEXT + "let z = nn.\n"
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=MODEL_URI, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    items = await complete(client, text, pos(text, "nn.\n", offset=3))
    assert {"dense", "conv", "cross_entropy", "he_normal", "attention"} <= set(items)
    assert not any(k.startswith("_") for k in items)
    text = MODEL_TEXT + "let z = nn.dense(x, 10, "
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=MODEL_URI, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    at = pos(text, "10, ", offset=4)
    items = await complete(client, text, at)
    for name in ["act", "init", "bias"]:
        assert items[name].insert_text == name + " = ", items[name]
    assert "units" not in items or items["units"].kind != types.CompletionItemKind.Field
    s = await client.text_document_signature_help_async(types.SignatureHelpParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI), position=at))
    assert s.signatures[0].label.startswith("nn.dense(x, units, act = none")
    assert s.active_parameter == 2


@pytest.mark.asyncio
async def test_signature_help_of_a_local_function(client: LanguageClient):
    text = MODEL_TEXT + "let z = mlp(x, 3"
    await open_doc(client, text)
    s = await client.text_document_signature_help_async(types.SignatureHelpParams(
        text_document=types.TextDocumentIdentifier(uri=MODEL_URI),
        position=pos(text, "mlp(x, 3", offset=8)))
    assert s.signatures[0].label == "mlp(features, hidden, classes = 10)"
    assert s.active_parameter == 1
    assert "Two dense layers" in s.signatures[0].documentation.value


# ---- outline, semantic tokens -------------------------------------------------------

@pytest.mark.asyncio
async def test_document_symbols(client: LanguageClient):
    await open_doc(client, MODEL_TEXT)
    syms = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=MODEL_URI)))
    by_name = {s.name: s for s in syms}
    assert list(by_name) == ["nn", "x", "y", "mlp", "model", "loss"]
    assert by_name["x"].detail == "input f32[?, 784]"
    assert by_name["mlp"].kind == types.SymbolKind.Function
    model = by_name["model"]
    assert model.kind == types.SymbolKind.Namespace
    assert [c.name for c in model.children] == ["w", "h", "logits"]
    assert model.children[0].detail == "var f32[784, 256]"


@pytest.mark.asyncio
async def test_semantic_tokens_tell_builtins_inputs_and_variables_apart(client: LanguageClient):
    await open_doc(client, MODEL_TEXT)
    r = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=MODEL_URI)))
    # The legend the server's capabilities give (checked in the raw test).
    types_ = ["namespace", "function", "variable", "parameter", "property", "type"]
    mods = ["declaration", "readonly", "defaultLibrary"]
    tokens, line, char = {}, 0, 0
    data = r.data
    for i in range(0, len(data), 5):
        dl, dc, length, t, m = data[i:i + 5]
        line += dl
        char = char + dc if dl == 0 else dc
        tokens[(line, char)] = (types_[t], {mods[b] for b in range(3) if m >> b & 1})
    def at(needle, offset=0, occurrence=0):
        p = pos(MODEL_TEXT, needle, occurrence, offset)
        return tokens[(p.line, p.character)]
    assert at("relu") == ("function", {"defaultLibrary"})
    assert at("matmul") == ("function", {"defaultLibrary"})
    assert at("x, w") == ("parameter", {"readonly"})      # an input
    assert at("w)\n") == ("variable", set())
    assert at("w: f32") == ("variable", {"declaration"})
    assert at("mlp(h") == ("function", set())
    assert at("dense(h") == ("function", set())
    assert at("f32[784") == ("type", {"defaultLibrary"})


# ---- imports relative to the file -----------------------------------------------------

@pytest.mark.asyncio
async def test_file_imports_resolve_relative_to_the_file(client: LanguageClient, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.rnl").write_text(
        "# Twice its argument.\ndef double(a) = a * 2.0\n")
    text = 'import "lib/helpers.rnl" as helpers\ninput x: f32[3]\nlet y = helpers.double(x)\n'
    uri = (tmp_path / "main.rnl").as_uri()
    assert list(await open_doc(client, text, uri=uri)) == []
    h = await hover(client, text, "double(x)", uri=uri)
    assert "def double(a)" in h and "Twice its argument" in h
    assert "f32[3]" in await hover(client, text, "let y", offset=4, uri=uri)


# ---- malformed input: the request fails, the server lives --------------------------------

def frame(obj):
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize_and_open(uri, text):
    """The frames of `initialize` (id 1) and of opening `text` as `uri`."""
    return [
        frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"capabilities": {}}}),
        frame({"jsonrpc": "2.0", "method": "textDocument/didOpen",
               "params": {"textDocument": {"uri": uri, "languageId": "runnel",
                                           "version": 1, "text": text}}}),
    ]


def read_messages(data):
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int(head.split(b":")[1])
        out.append(json.loads(rest[:n]))
        data = rest[n:]
    return out


def test_malformed_requests_get_errors_and_the_server_lives():
    uri = MODEL_URI
    msgs = [
        frame({"jsonrpc": "2.0", "id": 0, "method": "textDocument/hover",
               "params": {}}),                     # before initialize
        frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"capabilities": {}}}),
        frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        frame(b"{this is not json"),
        b"Content-Length: banana\r\n\r\n",        # a header that cannot be read
        frame({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}),
        frame({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri}}}),   # not open
        frame({"jsonrpc": "2.0", "method": "textDocument/didOpen",
               "params": {"textDocument": {"uri": uri, "languageId": "runnel",
                                           "version": 1, "text": MODEL_TEXT}}}),
        frame({"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri}}}),   # no position
        frame({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri},
                          "position": {"line": "one", "character": 0}}}),
        frame({"jsonrpc": "2.0", "id": 6, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri},
                          "position": {"line": 99999, "character": 99999}}}),
        frame({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri},
                          "position": {"line": pos(MODEL_TEXT, "input x").line,
                                       "character": 6}}}),
        frame({"jsonrpc": "2.0", "id": 8, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "method": "exit"}),
    ]
    p = subprocess.run([RUNNEL, "lsp"], input=b"".join(msgs), capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    replies = {m["id"]: m for m in read_messages(p.stdout) if "method" not in m}
    assert replies[0]["error"]["code"] == -32002
    caps = replies[1]["result"]["capabilities"]
    for feature in ["hoverProvider", "definitionProvider", "referencesProvider",
                    "completionProvider", "signatureHelpProvider",
                    "documentSymbolProvider", "semanticTokensProvider"]:
        assert caps[feature], feature
    assert caps["textDocumentSync"]["change"] == 2  # incremental
    assert caps["semanticTokensProvider"]["legend"] == {
        "tokenTypes": ["namespace", "function", "variable", "parameter",
                       "property", "type"],
        "tokenModifiers": ["declaration", "readonly", "defaultLibrary"]}
    assert "documentFormattingProvider" not in caps  # no formatter exists
    assert replies[None]["error"]["code"] == -32700
    assert replies[2]["error"]["code"] == -32601
    assert "not open" in replies[3]["error"]["message"]
    assert replies[4]["error"]["code"] == -32602
    assert replies[5]["error"]["code"] == -32602
    assert replies[6]["result"] is None
    assert "input x: f32[?, 784]" in replies[7]["result"]["contents"]["value"]
    assert replies[8]["result"] is None
    assert b"Content-Length is not a number" in p.stderr


def test_exit_does_not_wait_for_a_check_under_way(tmp_path):
    text = "for i in 0..1000000000 {\n    let a = i\n}\n"
    uri = (tmp_path / "forever.rnl").as_uri()
    msgs = [
        *initialize_and_open(uri, text),
        frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "method": "exit"}),
    ]
    start = time.monotonic()
    p = subprocess.run([RUNNEL, "lsp"], input=b"".join(msgs), capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    # The check would take 20 s to time out; exit kills it.
    assert time.monotonic() - start < 10


def test_exit_without_shutdown_is_status_1():
    p = subprocess.run([RUNNEL, "lsp"], input=frame({"jsonrpc": "2.0", "method": "exit"}),
                       capture_output=True, timeout=60)
    assert p.returncode == 1


def test_a_check_that_does_not_end_is_stopped_and_the_server_lives(tmp_path):
    # The checker runs in a child process, stopped after --check-timeout.
    text = ("input x: f32[3]\n"
            "for i in 0..1000000000 {\n"
            "    let a = i\n"
            "}\n"
            "let y = x * 2.0\n")
    uri = (tmp_path / "forever.rnl").as_uri()
    msgs = [
        *initialize_and_open(uri, text),
        # Waits for the check (document symbols need the current text's).
        frame({"jsonrpc": "2.0", "id": 2, "method": "textDocument/documentSymbol",
               "params": {"textDocument": {"uri": uri}}}),
        frame({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
               "params": {"textDocument": {"uri": uri},
                          "position": {"line": 4, "character": 8}}}),
        frame({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}),
        frame({"jsonrpc": "2.0", "method": "exit"}),
    ]
    p = subprocess.run([RUNNEL, "lsp", "--check-timeout", "1"],
                       input=b"".join(msgs), capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    messages = read_messages(p.stdout)
    replies = {m["id"]: m for m in messages if "method" not in m}
    published = [m["params"] for m in messages
                 if m.get("method") == "textDocument/publishDiagnostics"]
    assert len(published) == 1
    (d,) = published[0]["diagnostics"]
    assert d["message"].startswith("checking stopped after 1 s")
    assert d["range"]["start"] == {"line": 0, "character": 0}
    assert {s["name"] for s in replies[2]["result"]} == {"x", "y"}
    # Names still resolve; the type needs a check that finished.
    assert "input x" in replies[3]["result"]["contents"]["value"]
