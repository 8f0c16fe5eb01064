-- delete_entities: ARGV = root, then names. Deletes those entities (their two keys)
-- and every relation with one of the names as from or to, whether or not such an entity
-- exists; returns how many entities went.
local deleted = 0
for i = 2, #ARGV do
  local name = ARGV[i]
  local id = redis.call('ZSCORE', ENTS, name)
  if id then
    deleted = deleted + 1
    redis.call('ZREM', ENTS, name)
    redis.call('SREM', WIDE, name)
    redis.call('UNLINK', ekey(id), okey(id))
  end
  local index = rkey(name)
  for _, member in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    redis.call('ZREM', RELS, member)
    local from, to = split3(member)
    -- The relation's other end keeps no entry of it (a relation of `name` to itself has none).
    local other = to
    if to == name then
      other = from
    end
    if other ~= name then
      redis.call('ZREM', rkey(other), member)
    end
  end
  redis.call('UNLINK', index)
end
return deleted
