-- list_archives: ARGV = prefix, session. Returns {id, created, message count}, oldest first.
local sid = ARGV[2]
local ainfo = sk(sid, 'ainfo')
local out = {}
for _, aid in ipairs(redis.call('LRANGE', sk(sid, 'archives'), 0, -1)) do
  out[#out + 1] = {aid, redis.call('HGET', ainfo, aid), redis.call('LLEN', sk(sid, 'a:' .. aid))}
end
return out
