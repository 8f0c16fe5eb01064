-- rewind: ARGV = prefix, session, now, 'n' and a count (remove the last n messages) or 'a'
-- and a message prefix (keep up to that message, see count_through). Returns {0} when the
-- session does not exist (or has expired), {1} when it holds no such message, else {2,
-- removed message JSON...}, oldest first.
-- The removed messages leave the current epoch's postings: each of its terms' postings
-- string is rewritten without them (O(the session's current index)), and a term left
-- without postings leaves the epoch's term set and `P:ix:W`.
local sid, now, mode, arg = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local m = begin_write(sid, now)
if not m[1] then
  return {0}
end
local msgs = sk(sid, 'msgs')
local len = redis.call('LLEN', msgs)
local keep
if mode == 'n' then
  keep = math.max(len - tonumber(arg), 0)
else
  keep = count_through(msgs, len, arg)
  if not keep then
    return {1}
  end
end
if keep >= len then
  return {2}
end
local out = {2}
for _, json in ipairs(redis.call('LRANGE', msgs, keep, -1)) do
  out[#out + 1] = json
end
if keep == 0 then
  redis.call('UNLINK', msgs)
else
  redis.call('LTRIM', msgs, 0, keep - 1)
end

local e = tonumber(m[3] or '0')
local tk = termskey(sid, e)
local ms = pexp(m[6])
local lens, gone = {}, {}
for _, term in ipairs(redis.call('SMEMBERS', tk)) do
  local key = tkey(sid, e, term)
  local packed = redis.call('GET', key)
  if packed then
    local kept, cut = {}, false
    for _, p in ipairs(parse_postings(packed)) do
      if p[1] < keep then
        kept[#kept + 1] = p[1] .. ':' .. p[2] .. ':' .. p[3] .. ','
      else
        lens[p[1]] = tonumber(p[3])
        cut = true
      end
    end
    if #kept == 0 then
      redis.call('UNLINK', key)
      redis.call('SREM', ixkey(term), sid)
      gone[#gone + 1] = term
    elseif cut then
      redis.call('SET', key, table.concat(kept))
      if ms then
        redis.call('PEXPIREAT', key, ms)
      end
    end
  end
end
chunked('SREM', tk, gone)
local removed = 0
for _, l in pairs(lens) do
  removed = removed + l
end
local words = math.max(tonumber(m[4] or '0') - removed, 0)
redis.call('HINCRBY', STATS, 'docs', int(keep - len))
redis.call('HINCRBY', STATS, 'words', int(0 - removed))
touch(sid, now, m, {'words', int(words)})
track(sid, m, e, keep, words)
return out
