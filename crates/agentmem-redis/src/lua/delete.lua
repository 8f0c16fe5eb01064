-- delete_session: ARGV = prefix, session. Returns 1 when it existed.
local sid = ARGV[2]
if redis.call('EXISTS', sk(sid, 'meta')) == 0 then
  return 0
end
delete_session(sid)
return 1
