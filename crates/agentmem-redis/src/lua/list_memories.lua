-- list_memories: ARGV = prefix, kind ('' for all). Returns {id, sequence, item JSON} in
-- insertion order; the client orders by creation time (ties keep insertion order).
local kind = ARGV[2]
local zset = ORDER
if kind ~= '' then
  zset = kindkey(kind)
end
local flat = redis.call('ZRANGE', zset, 0, -1, 'WITHSCORES')
local out = {}
for i = 1, #flat, 2 do
  out[#out + 1] = {flat[i], flat[i + 1], redis.call('HGET', ITEMS, flat[i])}
end
return out
