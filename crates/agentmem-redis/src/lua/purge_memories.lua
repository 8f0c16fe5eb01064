-- purge_memories: ARGV = prefix, now, cutoff ('' for none; both in microseconds), batch size.
-- Deletes at most one batch of memory items, the expired ones (expiry <= now) first, then
-- those last updated before the cutoff, and returns how many it deleted; the client calls
-- again until 0, as for sessions (see purge.lua).
local now, cutoff, batch = ARGV[2], ARGV[3], tonumber(ARGV[4])
local victims = redis.call('ZRANGEBYSCORE', EXPIRES, '-inf', now, 'LIMIT', 0, batch)
for _, id in ipairs(victims) do
  delete_item(id)
end
local deleted = #victims
if deleted < batch and cutoff ~= '' then
  -- The expired items just deleted have left UPDATED, so none is counted twice.
  victims = redis.call('ZRANGEBYSCORE', UPDATED, '-inf', '(' .. cutoff, 'LIMIT', 0, batch - deleted)
  for _, id in ipairs(victims) do
    delete_item(id)
  end
  deleted = deleted + #victims
end
return deleted
