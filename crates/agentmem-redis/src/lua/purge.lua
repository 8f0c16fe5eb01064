-- purge: ARGV = prefix, cutoff (microseconds, '' for none), max sessions ('' for none),
-- batch size, now. Expired sessions go first (whatever the policy). Deletes at most one
-- batch and returns how many it deleted; the client calls again until 0, so the server is
-- never blocked for long and every batch re-reads the state (a session written meanwhile
-- is judged by its new time).
local cutoff, max, batch = ARGV[2], ARGV[3], tonumber(ARGV[4])
local reaped = reap(ARGV[5], batch)
if reaped > 0 then
  return reaped
end
local victims = {}
if cutoff ~= '' then
  victims = redis.call('ZRANGEBYSCORE', SESSIONS, '-inf', '(' .. cutoff, 'LIMIT', 0, batch)
end
if #victims == 0 and max ~= '' then
  local excess = redis.call('ZCARD', SESSIONS) - tonumber(max)
  if excess > 0 then
    -- Keep the newest; among sessions written in the same microsecond keep the smaller ids
    -- (the reference store's rule). ZRANGE orders ties by id ascending, so the boundary
    -- group is taken from its end.
    local boundary = redis.call('ZRANGE', SESSIONS, excess - 1, excess - 1, 'WITHSCORES')[2]
    victims = redis.call('ZRANGEBYSCORE', SESSIONS, '-inf', '(' .. boundary, 'LIMIT', 0, batch)
    local need = math.min(excess, batch) - #victims
    if need > 0 then
      local tied = redis.call('ZRANGEBYSCORE', SESSIONS, boundary, boundary)
      for i = #tied - need + 1, #tied do
        victims[#victims + 1] = tied[i]
      end
    end
  end
end
for _, sid in ipairs(victims) do
  delete_session(sid)
end
return #victims
