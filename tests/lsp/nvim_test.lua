-- Neovim's built-in LSP client against `runnel lsp`, headless:
--   RUNNEL=build/runnel nvim --headless -u NONE -i NONE -n \
--     -c "luafile tests/lsp/nvim_test.lua" examples/fashion_mlp.rnl
-- Opens the example, waits for its diagnostics (none), hovers the tensor
-- `h1` and prints the hover text, types a shape error and waits for its
-- diagnostic, and goes to a definition. Exits 0 when every check holds.
local runnel = assert(os.getenv("RUNNEL"), "RUNNEL is not set")
local failures = {}
local function check(ok, what)
  if not ok then table.insert(failures, what) end
end

local buf = vim.api.nvim_get_current_buf()
local published = 0
local default = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  default(err, result, ctx, config)
  published = published + 1
end

local client = vim.lsp.start_client({
  name = "runnel",
  cmd = { runnel, "lsp" },
  root_dir = vim.fn.getcwd(),
})
check(client ~= nil, "the client started")
vim.lsp.buf_attach_client(buf, client)

check(vim.wait(60000, function() return published >= 1 end, 20), "diagnostics arrived")
check(#vim.diagnostic.get(buf) == 0, "the example has no diagnostics")

-- The position of the first `needle` in the buffer (0-based).
local function find(needle, offset)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local col = line:find(needle, 1, true)
    if col then return { line = i - 1, character = col - 1 + (offset or 0) } end
  end
  error("not found: " .. needle)
end

local function request(method, position)
  local params = { textDocument = vim.lsp.util.make_text_document_params(buf), position = position }
  local replies = vim.lsp.buf_request_sync(buf, method, params, 20000) or {}
  local reply = replies[client] or {}
  return reply.result, reply.err
end

local hover = request("textDocument/hover", find("let h1", 4))
local text = hover and hover.contents and hover.contents.value or ""
print("hover on h1: " .. text:gsub("\n", " | "))
check(text:find("let h1: f32[?, 256]", 1, true), "hover shows h1's shape: " .. text)

-- Type a shape error at the end; Neovim sends it as an incremental change.
local before = published
local n = vim.api.nvim_buf_line_count(buf)
vim.api.nvim_buf_set_lines(buf, n, n, false, { "let bad = h1 + x" })
check(vim.wait(60000, function()
  return published > before and #vim.diagnostic.get(buf) > 0
end, 20), "the error typed is reported")
local diags = vim.diagnostic.get(buf)
local message = diags[1] and diags[1].message or ""
print("diagnostic: line " .. (diags[1] and diags[1].lnum + 1 or 0) .. ": " .. message)
check(message:find("cannot be broadcast", 1, true) and diags[1].lnum == n, "the diagnostic is at the line typed")

local def = request("textDocument/definition", find("cross_entropy(logits", 14))
local loc = def and (def[1] or def)
check(loc and loc.range and loc.range.start.line == find("let logits", 4).line,
  "go to definition of logits")

vim.lsp.stop_client(client)
if #failures > 0 then
  for _, f in ipairs(failures) do io.stderr:write("FAIL: " .. tostring(f) .. "\n") end
  vim.cmd("cquit 1")
end
print("nvim lsp test: ok")
vim.cmd("qall!")
