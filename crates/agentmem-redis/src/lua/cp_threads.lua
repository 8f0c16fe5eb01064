-- list_threads: ARGV = root. Returns {thread, checkpoint count, {created…}} per thread, in
-- byte order of the ids; `created` of the checkpoints with the greatest creation time score
-- (scores are microseconds as doubles: monotonic, so the newest is among them; the client
-- picks it by the exact time).
local out = {}
for _, thread in ipairs(redis.call('ZRANGE', THREADS, 0, -1)) do
  local times = tkey(thread, 'times')
  local count = redis.call('ZCARD', times)
  if count > 0 then
    local top = redis.call('ZREVRANGE', times, 0, 0, 'WITHSCORES')
    local created = {}
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', times, top[2], top[2])) do
      local ns, id = split2(m)
      created[#created + 1] = redis.call('HGET', ckey(thread, ns, id), 'created') or ''
    end
    out[#out + 1] = {thread, count, created}
  end
end
return out
