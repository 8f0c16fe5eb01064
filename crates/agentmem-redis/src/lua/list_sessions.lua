-- list_sessions: ARGV = prefix. Returns {id, created, updated, message count} per session,
-- read in one atomic step.
local out = {}
for _, sid in ipairs(redis.call('ZRANGE', SESSIONS, 0, -1)) do
  local m = redis.call('HMGET', sk(sid, 'meta'), 'created', 'updated')
  out[#out + 1] = {sid, m[1], m[2], redis.call('LLEN', sk(sid, 'msgs'))}
end
return out
