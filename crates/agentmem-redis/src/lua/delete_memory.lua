-- delete_memory: ARGV = prefix, id. Returns 1 when it existed.
local id = ARGV[2]
if redis.call('HEXISTS', ITEMS, id) == 0 then
  return 0
end
unindex_item(id)
redis.call('HDEL', ITEMS, id)
redis.call('HDEL', META, id)
redis.call('ZREM', ORDER, id)
return 1
