-- create_entities: ARGV = root, then per entity its name, type, wide flag ('1' when a text
-- of it goes beyond ASCII), n and n observations (each once: the client drops repeats).
-- Creates the entities whose names are not taken, by the graph or by an earlier entity of
-- the call; returns their positions in the call (1-based).
local created = {}
local i, k = 2, 0
while i <= #ARGV do
  local name, n = ARGV[i], tonumber(ARGV[i + 3])
  k = k + 1
  if redis.call('ZADD', ENTS, 'NX', next_seq(), name) == 1 then
    local id = redis.call('ZSCORE', ENTS, name)
    -- The type, then the observations: the entity's string.
    local packed = {ARGV[i + 1]}
    for j = i + 4, i + 3 + n do
      packed[#packed + 1] = ARGV[j]
    end
    redis.call('SET', ekey(id), table.concat(packed, Z))
    table.remove(packed, 1)
    chunked('SADD', okey(id), packed)
    if ARGV[i + 2] == '1' then
      redis.call('SADD', WIDE, name)
    end
    created[#created + 1] = k
  end
  i = i + 4 + n
end
save_seq()
return created
