-- append: ARGV = prefix, session, now, index (see push_messages), message JSON...
local sid, now = ARGV[2], ARGV[3]
local m = read_meta(sid)
local e = tonumber(m[3] or '0')
local len, words, nterms = push_messages(sid, e, 4, false)
redis.call('HINCRBY', STATS, 'docs', #ARGV - 5 - 2 * nterms)
redis.call('HINCRBY', STATS, 'words', words)
touch(sid, now, m, {'words', int(tonumber(m[4] or '0') + words)})
if m[5] then
  collect(sid, e, budget(nterms))
end
return len
