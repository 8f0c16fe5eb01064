-- replace_archive: ARGV = prefix, session, now, archive id, message JSON... Returns {0} when
-- the session does not exist (or has expired), {1} when it has no such archive, else {2,
-- creation time, new message count}. The archive's list is rewritten in place: its id, its
-- place in the archives list and its creation time stay; nobody sees a half-written list
-- (one script). Archives are not indexed and not in the counters, and the session's
-- `updated` does not move. The new list carries the session's expiry, as every key of an
-- expiring session does.
local sid, now, aid = ARGV[2], ARGV[3], ARGV[4]
local m = begin_write(sid, now)
if not m[1] then
  return {0}
end
local created = redis.call('HGET', sk(sid, 'ainfo'), aid)
if not created then
  return {1}
end
local key = sk(sid, 'a:' .. aid)
redis.call('UNLINK', key)
local jsons = {}
for k = 5, #ARGV do
  jsons[#jsons + 1] = ARGV[k]
end
local len = chunked('RPUSH', key, jsons) or 0
local ms = pexp(m[6])
if ms and len > 0 then
  redis.call('PEXPIREAT', key, ms)
end
return {2, created, len}
