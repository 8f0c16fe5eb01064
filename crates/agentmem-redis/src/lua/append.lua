-- append: ARGV = prefix, session, now, index JSON, message JSON...
local sid, now = ARGV[2], ARGV[3]
touch(sid, now)
push_messages(sid, cjson.decode(ARGV[4]), 5)
return redis.call('LLEN', sk(sid, 'msgs'))
