-- find_sessions: ARGV = prefix, now, how many to return at most, the cursor ('' for none:
-- ids sort after it), updated since (microseconds, '' for none), updated before ('' for
-- none), owner op ('s' to match the owner, '' for any), owner, the number of tags, then a
-- (key, value) pair per tag. Returns the summaries (see info_row) of the matching sessions
-- there at `now`, in id order (byte order, as Rust compares strings).
-- Candidates come from the smaller of: the smallest of the owner's and the tags' sorted sets
-- asked for, or every id (`P:ids`) when none is, read with ZRANGEBYLEX from the cursor on;
-- and the sessions written in the time range (`P:sessions` by score, sorted here). Each candidate is checked against its own
-- meta (labels, times, expiry), so an index entry left behind by the server's expiry never
-- shows a wrong session; such entries are removed as they are met.
local now, want, after = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local since, before = ARGV[5], ARGV[6]
reap(now, REAP)
local owner = false
if ARGV[7] == 's' then
  owner = ARGV[8]
end
local wanted = {}
for i = 0, tonumber(ARGV[9]) - 1 do
  wanted[#wanted + 1] = {ARGV[10 + 2 * i], ARGV[11 + 2 * i]}
end

-- With label filters, the smallest of their sets (never every id: reading a label's set
-- clears its stale entries, and it holds no more live sessions than `P:ids`).
local source, label, size = IDS, nil, nil
local function consider(key, l)
  local c = redis.call('ZCARD', key)
  if not size or c < size then
    source, label, size = key, l, c
  end
end
if owner then
  consider(ownerkey(owner), {owner})
end
for _, t in ipairs(wanted) do
  consider(tagkey(t[1], t[2]), t)
end
size = size or redis.call('ZCARD', IDS)

-- The summary of `sid` if it passes every filter, else nil (removing it from the label
-- index being read when it no longer belongs there).
local function check(sid)
  local f = redis.call('HMGET', sk(sid, 'meta'), 'created', 'updated', 'title', 'owner',
    'tags', 'expires')
  if not f[1] then
    if label then
      redis.call('ZREM', source, sid)
    elseif redis.call('ZSCORE', EXPIRY, sid) then
      bury(sid)
    end
    return nil
  end
  if f[6] and tonumber(f[6]) <= tonumber(now) then
    return nil
  end
  local tags = decode_tags(f[5])
  local stale = false
  if label and #label == 1 then
    stale = f[4] ~= label[1]
  elseif label then
    stale = tags[label[1]] ~= label[2]
  end
  if stale then
    redis.call('ZREM', source, sid)
    return nil
  end
  if owner and f[4] ~= owner then
    return nil
  end
  for _, t in ipairs(wanted) do
    if tags[t[1]] ~= t[2] then
      return nil
    end
  end
  local updated = tonumber(f[2] or f[1])
  if (since ~= '' and updated < tonumber(since)) or (before ~= '' and updated >= tonumber(before)) then
    return nil
  end
  return {sid, redis.call('LLEN', sk(sid, 'msgs')), f[1], f[2], f[3], f[4], f[5], f[6]}
end

local out = {}
-- Adds the summaries of `ids` that pass every filter to `out`, until it holds `want`.
local function take(ids)
  for _, sid in ipairs(ids) do
    local row = check(sid)
    if row then
      out[#out + 1] = row
      if #out >= want then
        return
      end
    end
  end
end

if since ~= '' or before ~= '' then
  local lo, hi = '-inf', '+inf'
  if since ~= '' then
    lo = since
  end
  if before ~= '' then
    hi = '(' .. before
  end
  if redis.call('ZCOUNT', SESSIONS, lo, hi) < size then
    local ids = {}
    for _, sid in ipairs(redis.call('ZRANGEBYSCORE', SESSIONS, lo, hi)) do
      if after == '' or byte_less(after, sid) then
        ids[#ids + 1] = sid
      end
    end
    table.sort(ids, byte_less)
    source, label = SESSIONS, nil
    take(ids)
    return out
  end
end

local start = '-'
if after ~= '' then
  start = '(' .. after
end
local CHUNK = 256
while #out < want do
  local chunk = redis.call('ZRANGEBYLEX', source, start, '+', 'LIMIT', 0, CHUNK)
  take(chunk)
  if #chunk < CHUNK then
    break
  end
  start = '(' .. chunk[#chunk]
end
return out
