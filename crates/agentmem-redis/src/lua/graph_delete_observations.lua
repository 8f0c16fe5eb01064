-- delete_observations: ARGV = root, then per deletion the entity's name, n and n
-- observations. Missing entities and observations are passed over; an entity that loses
-- some has its string rewritten without them. Returns how many observations went.
local removed, i = 0, 2
while i <= #ARGV do
  local id, n = redis.call('ZSCORE', ENTS, ARGV[i]), tonumber(ARGV[i + 1])
  local gone, count = {}, 0
  for j = i + 2, i + 1 + n do
    if id and redis.call('SREM', okey(id), ARGV[j]) == 1 then
      gone[ARGV[j]] = true
      count = count + 1
    end
  end
  if count > 0 then
    local parts = split_all(redis.call('GET', ekey(id)))
    local kept = {parts[1]}
    for p = 2, #parts do
      if not gone[parts[p]] then
        kept[#kept + 1] = parts[p]
      end
    end
    redis.call('SET', ekey(id), table.concat(kept, Z))
    removed = removed + count
  end
  i = i + 2 + n
end
return removed
