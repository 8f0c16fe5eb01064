-- delete_session: ARGV = prefix, session. Returns 1 when it existed (expired or not; the
-- remains of one the server has expired are cleared too, and count as nothing).
local sid = ARGV[2]
if redis.call('EXISTS', sk(sid, 'meta')) == 0 then
  if redis.call('ZSCORE', EXPIRY, sid) then
    bury(sid)
  end
  return 0
end
delete_session(sid)
return 1
