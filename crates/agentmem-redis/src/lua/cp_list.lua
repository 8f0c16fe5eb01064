-- list_checkpoints: ARGV = root, thread flag, thread, ns flag, ns, id flag, id, before flag,
-- before (a flag is '1' when the filter is given), limit ('' for none), cursor ('' to start
-- at the newest), budget, n, then n (field, value) pairs: the metadata filter's top-level
-- keys as `m:KEY` and their canonical JSON.
-- Walks the narrowest index newest first (the namespace's ids, the thread's `id NUL ns`, or
-- ALL's `id NUL thread NUL ns`), skipping what the filters refuse, and returns {rows, cursor}:
-- the rows (see `row`) of the checkpoints that pass, and the last member examined when it
-- stopped before the end (nil at the end). It stops once `limit` rows are taken and the next
-- member has another id (ties stay whole: the client orders them by thread and namespace), or,
-- with fewer rows, after examining `budget` members (the client calls again from the cursor).
local has_thread, thread = ARGV[2] == '1', ARGV[3]
local has_ns, ns = ARGV[4] == '1', ARGV[5]
local has_id, want = ARGV[6] == '1', ARGV[7]
local has_before, before = ARGV[8] == '1', ARGV[9]
local limit = tonumber(ARGV[10])
local cursor = ARGV[11]
local budget = tonumber(ARGV[12])
local n = tonumber(ARGV[13])
local mfields, mvalues = {}, {}
for i = 1, n do
  mfields[i] = ARGV[12 + 2 * i]
  mvalues[i] = ARGV[13 + 2 * i]
end

local key, parse
if has_thread and has_ns then
  key = nkey(thread, ns, 'ids')
  parse = function(m) return thread, ns, m end
elseif has_thread then
  key = tkey(thread, 'ids')
  parse = function(m)
    local id, space = split2(m)
    return thread, space, id
  end
else
  key = ALL
  parse = function(m)
    local id, t, space = split3(m)
    return t, space, id
  end
end

-- Members are the bare id (one namespace) or start with `id NUL`: both sort with their id.
local min, max = '-', '+'
if has_id then
  if has_before and not byte_less(want, before) then
    return {{}, false}
  end
  min = '[' .. want
  if has_thread and has_ns then
    max = '[' .. want
  else
    max = '(' .. want .. '\1'
  end
elseif has_before then
  max = '(' .. before
end
if cursor ~= '' then
  max = '(' .. cursor
end

local function passes(t, space, id)
  if has_ns and space ~= ns then
    return false
  end
  if n == 0 then
    return true
  end
  local got = redis.call('HMGET', ckey(t, space, id), unpack(mfields))
  for i = 1, n do
    if got[i] ~= mvalues[i] then
      return false
    end
  end
  return true
end

local out, seen, last_id, prev = {}, 0, nil, nil
while true do
  local chunk = redis.call('ZREVRANGEBYLEX', key, max, min, 'LIMIT', 0, 128)
  if #chunk == 0 then
    return {out, false}
  end
  for _, m in ipairs(chunk) do
    local t, space, id = parse(m)
    if limit and #out >= limit and id ~= last_id then
      return {out, prev}
    end
    if passes(t, space, id) then
      local r = row(t, space, id)
      if r then
        out[#out + 1] = r
        last_id = id
      end
    end
    prev = m
    seen = seen + 1
    -- Once `limit` rows are taken, only the rest of the last id's ties is left to read: the
    -- budget no longer stops it (the client stops at `limit` rows, trusting the ties whole).
    if seen >= budget and not (limit and #out >= limit) then
      return {out, prev}
    end
  end
  max = '(' .. chunk[#chunk]
end
