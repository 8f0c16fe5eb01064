-- delete_relations: ARGV = root, then from, to and type of each relation. Deletes those
-- stored, with their index entries under both ends; returns how many went.
local removed = 0
for i = 2, #ARGV - 2, 3 do
  local member = relation_at(i)
  if redis.call('ZREM', RELS, member) == 1 then
    removed = removed + 1
    redis.call('ZREM', rkey(ARGV[i]), member)
    redis.call('ZREM', rkey(ARGV[i + 1]), member)
  end
end
return removed
