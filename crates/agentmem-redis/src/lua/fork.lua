-- fork: ARGV = prefix, source, target, now, message prefix ('' for all messages; else the
-- start of the JSON of the message to stop at, see count_through). Returns {0} when the target
-- exists (and has not expired), {1} when the source does not exist (or has expired), {2}
-- when it holds no such message, else {3, the target's summary (see info_row)}.
-- One script, so the copy is atomic: the target appears whole or not at all. The copy's
-- index (epoch 0) is the source's current postings of the copied positions; archives and
-- the expiry are not copied.
local src, dst, now, at = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if begin_write(dst, now)[1] then
  return {0}
end
local m = read_meta(src)
if not alive(m, now) then
  return {1}
end
local msgs = sk(src, 'msgs')
local len = redis.call('LLEN', msgs)
local stop = len
if at ~= '' then
  stop = count_through(msgs, len, at)
  if not stop then
    return {2}
  end
end

local dmsgs = sk(dst, 'msgs')
local i = 0
while i < stop do
  local j = math.min(i + 1000, stop) - 1
  redis.call('RPUSH', dmsgs, unpack(redis.call('LRANGE', msgs, i, j)))
  i = j + 1
end

-- The index of the copied messages: each term's postings at positions before `stop`.
local e = tonumber(m[3] or '0')
local lens, terms = {}, {}
if stop > 0 then
  for _, term in ipairs(redis.call('SMEMBERS', termskey(src, e))) do
    local packed = redis.call('GET', tkey(src, e, term))
    if packed then
      local kept = {}
      for _, p in ipairs(parse_postings(packed)) do
        if p[1] < stop then
          kept[#kept + 1] = p[1] .. ':' .. p[2] .. ':' .. p[3] .. ','
          lens[p[1]] = tonumber(p[3])
        end
      end
      if #kept > 0 then
        redis.call('SET', tkey(dst, 0, term), table.concat(kept))
        redis.call('SADD', ixkey(term), dst)
        terms[#terms + 1] = term
      end
    end
  end
end
chunked('SADD', termskey(dst, 0), terms)
local words = 0
for _, l in pairs(lens) do
  words = words + l
end
redis.call('HINCRBY', STATS, 'docs', stop)
redis.call('HINCRBY', STATS, 'words', int(words))

local f = redis.call('HMGET', sk(src, 'meta'), 'metadata', 'title', 'owner', 'tags')
local fields = {'words', int(words)}
for k, name in ipairs({'metadata', 'title', 'owner', 'tags'}) do
  if f[k] then
    fields[#fields + 1] = name
    fields[#fields + 1] = f[k]
  end
end
touch(dst, now, {}, fields)
if f[3] then
  redis.call('ZADD', ownerkey(f[3]), 0, dst)
end
for k, v in pairs(decode_tags(f[4])) do
  if type(k) == 'string' and type(v) == 'string' then
    redis.call('ZADD', tagkey(k, v), 0, dst)
  end
end
return {3, info_row(dst)}
