-- Migration from schema version 1 to 2 (memory-item scopes and expiry); ARGV[1] = key root
-- (the prefix, or `{prefix}` on a cluster).
-- Runs inside schema.rs' version guard, in one script, so it must not `return`.
-- Version 1 items become global (scope '') and never expire:
--   META   id -> created "\n" kind "\n" key  becomes  created "\n" "\n" "\n" kind "\n" key
--          (expires '' and scope '' inserted);
--   KEYIDX kind "\n" key -> id               becomes  "\n" kind "\n" key -> id (scope '');
--   P:mem:scope: (the global scope's set) gets every id with its insertion sequence;
--   P:mem:updated gets each item's updated_at, read from its JSON (its creation time from
--          META when that is unreadable);
--   MSTATS gets docs:<kind>: and words:<kind>: (the global scope's counters).
-- Each step recognises entries it has already converted, so if the script is cut short
-- (Redis does not roll a failed script back) running it again completes the job.
local P = ARGV[1]
local items, meta, order = P .. ':mem:items', P .. ':mem:meta', P .. ':mem:order'
local keyidx, stats = P .. ':mem:keys', P .. ':mem:stats'
local updated_set, global = P .. ':mem:updated', P .. ':mem:scope:'

-- Microseconds since the epoch of a time as serde writes chrono's DateTime<Utc>
-- (`2026-01-02T03:04:05.123456Z`, 0 to 9 fraction digits, a sign and more digits for years
-- beyond 0000-9999), truncated like `timestamp_micros`; nil for anything else.
local function rfc3339_micros(s)
  local y, mo, d, h, mi, sec, frac = string.match(s,
    '^([+-]?%d%d%d%d+)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)%.?(%d*)Z$')
  if not y then
    return nil
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil).
  if mo <= 2 then
    y = y - 1
  end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local doy = math.floor((153 * ((mo + 9) % 12) + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  local seconds = days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(sec)
  return seconds * 1000000 + tonumber(string.sub(frac .. '000000', 1, 6))
end

local m = redis.call('HGETALL', meta)
for i = 1, #m, 2 do
  local id = m[i]
  local created, kind, key = string.match(m[i + 1], '^([^\n]*)\n([^\n]*)\n([^\n]*)$')
  if created then
    local updated = nil
    local json = redis.call('HGET', items, id)
    if json then
      local ok, item = pcall(cjson.decode, json)
      if ok and type(item) == 'table' and type(item.updated_at) == 'string' then
        updated = rfc3339_micros(item.updated_at)
      end
    end
    updated = updated or tonumber(created)
    if updated then
      redis.call('ZADD', updated_set, updated, id)
    end
    local seq = redis.call('ZSCORE', order, id)
    if seq then
      redis.call('ZADD', global, seq, id)
    end
    -- Last: the converted entry is what marks the item done.
    redis.call('HSET', meta, id, created .. '\n\n\n' .. kind .. '\n' .. key)
  end
end

local k = redis.call('HGETALL', keyidx)
for i = 1, #k, 2 do
  local field = k[i]
  if string.match(field, '^[^\n]*\n[^\n]*$') then
    redis.call('HSET', keyidx, '\n' .. field, k[i + 1])
    redis.call('HDEL', keyidx, field)
  end
end

local st = redis.call('HGETALL', stats)
for i = 1, #st, 2 do
  local what, kind = string.match(st[i], '^(%a+):([%w_]+)$')
  if what and tonumber(redis.call('HGET', stats, 'docs:' .. kind) or '0') > 0 then
    redis.call('HSET', stats, what .. ':' .. kind .. ':', st[i + 1])
  end
end
