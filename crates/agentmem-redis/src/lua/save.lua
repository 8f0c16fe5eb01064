-- save_session: ARGV = prefix, session, now, metadata JSON, index (see push_messages),
-- message JSON... The session becomes exactly the given messages; its archives, labels and
-- expiry stay (a session that has expired is buried first: the save starts a new one).
local sid, now = ARGV[2], ARGV[3]
local m = begin_write(sid, now)
local msgs = sk(sid, 'msgs')
uncount(redis.call('LLEN', msgs), m)
local e, fields = retire(sid, m)
redis.call('UNLINK', msgs)
local len, words, nterms = push_messages(sid, e, 5, true, pexp(m[6]))
redis.call('HINCRBY', STATS, 'docs', len)
redis.call('HINCRBY', STATS, 'words', words)
fields[4] = int(words)
fields[#fields + 1] = 'metadata'
fields[#fields + 1] = ARGV[4]
touch(sid, now, m, fields)
track(sid, m, e, len, words)
if m[5] or fields[5] then
  collect(sid, e, budget(nterms))
end
return 1
