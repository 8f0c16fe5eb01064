-- compact: ARGV = prefix, session, now, archive id base, index JSON, replacement JSON...
-- Returns false when the session does not exist, else {archive id, archived count}.
-- One script, so appends racing with it run wholly before (archived) or after (kept).
local sid, now, base = ARGV[2], ARGV[3], ARGV[4]
if redis.call('EXISTS', sk(sid, 'meta')) == 0 then
  return false
end
drop_index(sid)
local ainfo = sk(sid, 'ainfo')
local aid = base
local n = 2
while redis.call('HEXISTS', ainfo, aid) == 1 do
  aid = base .. '_' .. n
  n = n + 1
end
local msgs = sk(sid, 'msgs')
local count = redis.call('LLEN', msgs)
if count > 0 then
  -- O(1): the list itself becomes the archive; nothing is copied.
  redis.call('RENAME', msgs, sk(sid, 'a:' .. aid))
end
redis.call('RPUSH', sk(sid, 'archives'), aid)
redis.call('HSET', ainfo, aid, now)
push_messages(sid, cjson.decode(ARGV[5]), 6)
touch(sid, now)
return {aid, count}
