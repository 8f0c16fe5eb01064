-- add_observations: ARGV = root, then per addition the entity's name, wide flag ('1' when a
-- content goes beyond ASCII), n and n contents. When an entity is missing, changes nothing
-- and returns {0, the addition's position}. Else appends to each entity, in order, the
-- contents it does not hold (a later addition sees what an earlier one added) and returns
-- 1, then per addition how many it added and their positions among its contents (1-based).
local ids = {}
local i = 2
while i <= #ARGV do
  local id = redis.call('ZSCORE', ENTS, ARGV[i])
  if not id then
    return {0, #ids + 1}
  end
  ids[#ids + 1] = id
  i = i + 3 + tonumber(ARGV[i + 2])
end
local out = {1}
i = 2
for _, id in ipairs(ids) do
  local n, key, added = tonumber(ARGV[i + 2]), okey(id), {}
  local at = #out + 1
  out[at] = 0
  for j = 1, n do
    local content = ARGV[i + 2 + j]
    if redis.call('SADD', key, content) == 1 then
      added[#added + 1] = content
      out[#out + 1] = j
    end
  end
  out[at] = #added
  if #added > 0 then
    redis.call('APPEND', ekey(id), Z .. table.concat(added, Z))
    if ARGV[i + 1] == '1' then
      redis.call('SADD', WIDE, ARGV[i])
    end
  end
  i = i + 3 + n
end
return out
