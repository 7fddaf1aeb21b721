-- Drives `cgpu-lint server` from Neovim's built-in LSP client (Neovim 0.7.2 API), headless:
--   nvim --headless --clean -u NONE -c 'luafile tests/nvim/fix_with_lsp.lua'
-- Environment:
--   CGPU_LINT_BIN    the cgpu-lint binary
--   CGPU_LINT_FILES  the files to fix, one per line (edited in place, then written)
--   CGPU_LINT_MODE   "quickfix": the quick fix of each finding, one at a time, as a person picks
--                    them from the code-action menu; "fixall": the source.fixAll.cgpu-lint action
-- For each file: open it, wait for the server's diagnostics, apply the fixes, write the buffer.
-- Exits 0 when every file was handled, else prints why on stderr and exits 1.

local bin = os.getenv('CGPU_LINT_BIN')
local mode = os.getenv('CGPU_LINT_MODE') or 'quickfix'
local files = vim.split(os.getenv('CGPU_LINT_FILES') or '', '\n', { trimempty = true })
local TIMEOUT = 60000

local function log(msg)
  io.stderr:write('nvim-lsp-e2e: ' .. msg .. '\n')
end

local function fail(msg)
  log('FAIL: ' .. msg)
  vim.cmd('cquit 1')
end

if not bin or #files == 0 then
  fail('CGPU_LINT_BIN and CGPU_LINT_FILES must be set')
end

-- The latest publishDiagnostics per URI, with the version it was for.
local published = {}

local root = vim.fn.fnamemodify(files[1], ':p:h')
local client_id = vim.lsp.start_client({
  name = 'cgpu-lint',
  cmd = { bin, 'server' },
  root_dir = root,
  handlers = {
    ['textDocument/publishDiagnostics'] = function(err, result, ctx, config)
      published[result.uri] = result
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
    end,
  },
})
if not client_id then
  fail('vim.lsp.start_client failed')
end

-- Wait until the server has published diagnostics for the buffer's current text.
local function fresh_diagnostics(bufnr)
  local uri = vim.uri_from_bufnr(bufnr)
  local ok = vim.wait(TIMEOUT, function()
    local p = published[uri]
    return p ~= nil and p.version == vim.lsp.util.buf_versions[bufnr]
  end, 20)
  if not ok then
    fail('no diagnostics for ' .. uri .. ' version ' .. tostring(vim.lsp.util.buf_versions[bufnr]))
  end
  return published[uri].diagnostics
end

local function code_actions(client, bufnr, range, diagnostics, only)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = range,
    context = { diagnostics = diagnostics, only = only },
  }
  local resp = client.request_sync('textDocument/codeAction', params, TIMEOUT, bufnr)
  if not resp then
    fail('codeAction: no response')
  end
  if resp.err then
    fail('codeAction: ' .. vim.inspect(resp.err))
  end
  return resp.result or {}
end

for _, file in ipairs(files) do
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if not vim.wait(TIMEOUT, function() return client.initialized end, 20) then
    fail('the server did not initialize')
  end
  local diagnostics = fresh_diagnostics(bufnr)
  log(file .. ': ' .. #diagnostics .. ' diagnostics')
  if #diagnostics == 0 then
    fail(file .. ': expected findings to fix')
  end
  local applied = 0
  if mode == 'fixall' then
    local whole = { start = { line = 0, character = 0 }, ['end'] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 } }
    local actions = code_actions(client, bufnr, whole, diagnostics, { 'source.fixAll' })
    -- No action when every fix of the file is unsafe (held back, as `fix` holds them).
    if #actions > 1 then
      fail(file .. ': expected at most one fix-all action, got ' .. vim.inspect(actions))
    end
    if #actions == 1 then
      vim.lsp.util.apply_workspace_edit(actions[1].edit, client.offset_encoding)
      applied = 1
    end
  else
    -- Put the cursor on each finding in turn; take the first quick fix offered there; after each
    -- edit, wait for the findings of the new text, as a person reading them would.
    for _ = 1, 50 do
      local done = true
      for _, d in ipairs(diagnostics) do
        -- The preferred quick fix: an unsafe one is offered too, labelled, but not preferred.
        local actions = vim.tbl_filter(function(a)
          return a.isPreferred
        end, code_actions(client, bufnr, d.range, { d }, { 'quickfix' }))
        if #actions > 0 then
          vim.lsp.util.apply_workspace_edit(actions[1].edit, client.offset_encoding)
          applied = applied + 1
          done = false
          break
        end
      end
      if done then
        break
      end
      diagnostics = fresh_diagnostics(bufnr)
    end
  end
  log(file .. ': ' .. applied .. ' action(s) applied (' .. mode .. ')')
  -- A file whose fixes are all unsafe gets none; the test compares it with its golden file.
  vim.cmd('write')
end

vim.lsp.stop_client(client_id)
vim.wait(5000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 20)
vim.cmd('qall!')
