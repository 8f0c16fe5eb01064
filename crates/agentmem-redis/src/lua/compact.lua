-- compact: ARGV = prefix, session, now, archive id base, index (see push_messages),
-- replacement JSON... Returns false when the session does not exist (or has expired), else {archive id,
-- archived count}. One script, so appends racing with it run wholly before (archived) or
-- after (kept). O(1) in the archived messages: the list is renamed and the index's epoch
-- retired; later writes delete the retired postings.
local sid, now, base = ARGV[2], ARGV[3], ARGV[4]
local m = begin_write(sid, now)
if not m[1] then
  return false
end
local ainfo = sk(sid, 'ainfo')
local aid = base
local n = 2
while redis.call('HEXISTS', ainfo, aid) == 1 do
  aid = base .. '_' .. n
  n = n + 1
end
local msgs = sk(sid, 'msgs')
local count = redis.call('LLEN', msgs)
local e, fields = retire(sid, m)
if count > 0 then
  -- O(1): the list itself becomes the archive; nothing is copied.
  redis.call('RENAME', msgs, sk(sid, 'a:' .. aid))
end
redis.call('RPUSH', sk(sid, 'archives'), aid)
redis.call('HSET', ainfo, aid, now)
local len, words = push_messages(sid, e, 5, true, pexp(m[6]))
redis.call('HINCRBY', STATS, 'docs', int(len - count))
redis.call('HINCRBY', STATS, 'words', int(words - tonumber(m[4] or '0')))
fields[4] = int(words)
touch(sid, now, m, fields)
track(sid, m, e, len, words)
return {aid, count}
