-- update_session: ARGV = prefix, session, now, title op, title, owner op, owner, expiry op,
-- expiry (microseconds), the most tags a session may carry, the number of tags patched, then
-- (key, op, value) per tag. An op is 'k' (keep), 's' (set to the value) or 'r' (remove).
-- Returns {0} when the session does not exist (or has expired), {2, n} when the result would
-- carry n tags, too many, changing nothing, else {1, summary (see info_row)}. An expiry at or
-- before `now` deletes the session at once (the summary is the one it had).
local sid, now = ARGV[2], ARGV[3]
local m = begin_write(sid, now)
if not m[1] then
  return {0}
end
local meta = sk(sid, 'meta')
local cur = redis.call('HMGET', meta, 'owner', 'tags')
local tags = decode_tags(cur[2])
local next, changed = {}, false
for k, v in pairs(tags) do
  next[k] = v
end
local ntags = tonumber(ARGV[11])
for i = 0, ntags - 1 do
  local k, op, v = ARGV[12 + 3 * i], ARGV[13 + 3 * i], ARGV[14 + 3 * i]
  if op == 's' then
    next[k] = v
  else
    next[k] = nil
  end
end
local count = 0
for _ in pairs(next) do
  count = count + 1
end
if count > tonumber(ARGV[10]) then
  return {2, count}
end

if ARGV[4] == 's' then
  redis.call('HSET', meta, 'title', ARGV[5])
elseif ARGV[4] == 'r' then
  redis.call('HDEL', meta, 'title')
end
if ARGV[6] ~= 'k' then
  local old, new = cur[1], false
  if ARGV[6] == 's' then
    new = ARGV[7]
  end
  if old ~= new then
    if old then
      redis.call('ZREM', ownerkey(old), sid)
    end
    if new then
      redis.call('ZADD', ownerkey(new), 0, sid)
      redis.call('HSET', meta, 'owner', new)
    else
      redis.call('HDEL', meta, 'owner')
    end
  end
end
for i = 0, ntags - 1 do
  local k = ARGV[12 + 3 * i]
  local old, new = tags[k], next[k]
  if old ~= new then
    changed = true
    if type(old) == 'string' then
      redis.call('ZREM', tagkey(k, old), sid)
    end
    if new then
      redis.call('ZADD', tagkey(k, new), 0, sid)
    end
  end
end
if changed then
  if count == 0 then
    redis.call('HDEL', meta, 'tags')
  else
    redis.call('HSET', meta, 'tags', cjson.encode(next))
  end
end

if ARGV[8] == 's' then
  local at = ARGV[9]
  if tonumber(at) <= tonumber(now) then
    local row = info_row(sid)
    row[8] = at
    delete_session(sid)
    return {1, row}
  end
  redis.call('HSET', meta, 'expires', at)
  redis.call('ZADD', EXPIRY, at, sid)
  redis.call('HSET', XCOUNTS, sid,
    int(redis.call('LLEN', sk(sid, 'msgs'))) .. ' ' .. int(tonumber(m[4] or '0')) .. ' '
      .. int(tonumber(m[3] or '0')))
  expire_all(sid, pexp(at))
elseif ARGV[8] == 'r' and m[6] then
  redis.call('HDEL', meta, 'expires')
  redis.call('ZREM', EXPIRY, sid)
  redis.call('HDEL', XCOUNTS, sid)
  expire_all(sid, nil)
end
return {1, info_row(sid)}
