-- append: ARGV = prefix, session, now, index (see push_messages), message JSON...
-- A session that has expired is buried first: the append starts a new one.
local sid, now = ARGV[2], ARGV[3]
local m = begin_write(sid, now)
local e = tonumber(m[3] or '0')
local len, words, nterms = push_messages(sid, e, 4, false, pexp(m[6]))
redis.call('HINCRBY', STATS, 'docs', #ARGV - 5 - 2 * nterms)
redis.call('HINCRBY', STATS, 'words', words)
local total = tonumber(m[4] or '0') + words
touch(sid, now, m, {'words', int(total)})
track(sid, m, e, len, total)
if m[5] then
  collect(sid, e, budget(nterms))
end
return len
