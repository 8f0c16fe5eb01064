-- create_relations: ARGV = root, then from, to and type of each relation. Creates those not
-- stored (nor earlier in the call), indexed under both ends; returns their positions in the
-- call (1-based).
local created = {}
for i = 2, #ARGV - 2, 3 do
  local member, s = relation_at(i), next_seq()
  if redis.call('ZADD', RELS, 'NX', s, member) == 1 then
    redis.call('ZADD', rkey(ARGV[i]), s, member)
    redis.call('ZADD', rkey(ARGV[i + 1]), s, member)
    created[#created + 1] = (i + 1) / 3
  end
end
save_seq()
return created
