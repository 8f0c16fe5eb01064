-- list_sessions: ARGV = prefix, now. Returns the summary of every session there at `now`
-- (see info_row), read in one atomic step.
local now = ARGV[2]
reap(now, REAP)
local out = {}
for _, sid in ipairs(redis.call('ZRANGE', SESSIONS, 0, -1)) do
  local row = info_row(sid)
  if row[3] and (not row[8] or tonumber(row[8]) > tonumber(now)) then
    out[#out + 1] = row
  end
end
return out
