-- prune_checkpoints: ARGV = root, mode ('all' or 'latest'), then the threads. 'all' deletes
-- each thread; 'latest' keeps the newest (greatest id) checkpoint of each namespace with its
-- writes and the blobs it reads, and deletes every other write of the thread (those made
-- ahead of a checkpoint not stored too). All in one step; returns how many checkpoints went.
local all = ARGV[2] == 'all'
local count = 0

-- The greatest checkpoint id of a namespace (false when it holds none), read once per call.
local function newest_of(cache, thread, ns)
  if cache[ns] == nil then
    cache[ns] = redis.call('ZREVRANGEBYLEX', nkey(thread, ns, 'ids'), '+', '-', 'LIMIT', 0,
      1)[1] or false
  end
  return cache[ns]
end

for i = 3, #ARGV do
  local thread = ARGV[i]
  if all then
    count = count + delete_thread(thread)
  else
    local newest = {}
    for _, m in ipairs(redis.call('ZRANGE', tkey(thread, 'ids'), 0, -1)) do
      local id, ns = split2(m)
      if id ~= newest_of(newest, thread, ns) then
        drop(thread, ns, id, false)
        count = count + 1
      end
    end
    for ns in pairs(newest) do
      gc_blobs(thread, ns)
    end
    -- The writes left that no kept checkpoint owns (drop took those of the checkpoints).
    for _, m in ipairs(redis.call('ZRANGE', tkey(thread, 'writes'), 0, -1)) do
      local ns, id = split2(m)
      if id ~= newest_of(newest, thread, ns) then
        drop_writes(thread, ns, id)
      end
    end
  end
end
return count
