-- delete_memory: ARGV = prefix, id. Returns 1 when it existed (expired or not).
local id = ARGV[2]
if redis.call('HEXISTS', ITEMS, id) == 0 then
  return 0
end
delete_item(id)
return 1
