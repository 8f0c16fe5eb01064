-- Migration from schema version 3 to 4 (session labels and expiry); ARGV[1] = key root.
-- Version 4 adds to a session's meta hash the optional fields `title`, `owner`, `tags` (a
-- JSON object) and `expires` (microseconds), absent in version 3 data, which therefore reads
-- as sessions without labels that never expire; and store-wide keys: `P:ids` (every session
-- id, score 0, for lookups in id order), the label index `P:lab:…` and `P:expiry`,
-- `P:xcounts` (sessions that expire). Only `P:ids` needs filling: it gets every session of
-- `P:sessions`. Running it twice adds nothing. The version is bumped so that builds of
-- version 3, which would neither keep `P:ids` nor give new keys a session's expiry, refuse
-- the data.
local P = ARGV[1]
local sessions = redis.call('ZRANGE', P .. ':sessions', 0, -1)
local i = 0
while i < #sessions do
  local args = {}
  for j = i + 1, math.min(i + 1000, #sessions) do
    args[#args + 1] = 0
    args[#args + 1] = sessions[j]
  end
  redis.call('ZADD', P .. ':ids', unpack(args))
  i = i + 1000
end
