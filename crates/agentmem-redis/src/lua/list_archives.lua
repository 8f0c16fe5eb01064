-- list_archives: ARGV = prefix, session, now. Returns {id, created, message count}, oldest
-- first; none when the session has expired at `now`.
local sid = ARGV[2]
if not alive(read_meta(sid), ARGV[3]) then
  return {}
end
local ainfo = sk(sid, 'ainfo')
local out = {}
for _, aid in ipairs(redis.call('LRANGE', sk(sid, 'archives'), 0, -1)) do
  out[#out + 1] = {aid, redis.call('HGET', ainfo, aid), redis.call('LLEN', sk(sid, 'a:' .. aid))}
end
return out
