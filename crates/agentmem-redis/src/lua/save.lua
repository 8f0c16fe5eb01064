-- save_session: ARGV = prefix, session, now, metadata JSON, index JSON, message JSON...
-- The session becomes exactly the given messages; its archives stay.
local sid, now = ARGV[2], ARGV[3]
drop_index(sid)
redis.call('UNLINK', sk(sid, 'msgs'))
touch(sid, now)
redis.call('HSET', sk(sid, 'meta'), 'metadata', ARGV[4])
push_messages(sid, cjson.decode(ARGV[5]), 6)
return 1
