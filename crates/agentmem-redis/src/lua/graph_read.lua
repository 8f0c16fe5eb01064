-- read_graph: ARGV = root, mode (`all`, `search`, `open`), then for `search` the text,
-- lowercased by the client, for `open` the names (each once). Returns {entities, relations}:
-- per entity its name, number and string (type, then `NUL observation` each); per relation
-- its RELS member and number. The client orders both by number and applies the query's
-- exact rule, so a reply may hold more:
-- - `all`: the whole graph;
-- - `open`: the named entities and the relations naming them;
-- - `search`: the entities that may match and relations naming them. Lua knows no Unicode
--   case, so it decides only entities whose texts are all ASCII (by ASCII lowercase, which
--   is their Unicode one; the text holds no NUL, so a match never spans two parts), and
--   passes on those in WIDE. When more than an eighth of the entities pass, every relation
--   is returned (cheaper than reading an index per entity).
local mode, text = ARGV[2], ARGV[3]
local ents, rels = {}, {}

local function push_entity(name, score, packed)
  local n = #ents
  ents[n + 1], ents[n + 2], ents[n + 3] = name, score, packed
end

-- Adds the flat list of (member, number) pairs `scored` to the relations.
local function push_relations(scored)
  for _, v in ipairs(scored) do
    rels[#rels + 1] = v
  end
end

local function relations_of(name)
  push_relations(redis.call('ZRANGE', rkey(name), 0, -1, 'WITHSCORES'))
end

if mode == 'open' then
  for i = 3, #ARGV do
    local name = ARGV[i]
    local id = redis.call('ZSCORE', ENTS, name)
    if id then
      push_entity(name, id, redis.call('GET', ekey(id)))
      relations_of(name)
    end
  end
  return {ents, rels}
end

local scored = redis.call('ZRANGE', ENTS, 0, -1, 'WITHSCORES')
-- The entities' strings, 500 keys per MGET (a missing one, never written so, is false and
-- reaches the client as nil: corrupt data).
local packed = {}
for first = 1, #scored, 1000 do
  local keys = {}
  for i = first, math.min(first + 999, #scored), 2 do
    keys[#keys + 1] = ekey(scored[i + 1])
  end
  for _, v in ipairs(redis.call('MGET', unpack(keys))) do
    packed[#packed + 1] = v
  end
end

if mode == 'all' then
  for i = 1, #scored, 2 do
    push_entity(scored[i], scored[i + 1], packed[(i + 1) / 2])
  end
  push_relations(redis.call('ZRANGE', RELS, 0, -1, 'WITHSCORES'))
  return {ents, rels}
end

local wide = {}
for _, name in ipairs(redis.call('SMEMBERS', WIDE)) do
  wide[name] = true
end
-- A text beyond ASCII matches no entity of ASCII texts.
local ascii = not string.find(text, '[\128-\255]')
local function contains(s)
  return string.find(string.lower(s), text, 1, true)
end
local names = {}
for i = 1, #scored, 2 do
  local name, p = scored[i], packed[(i + 1) / 2]
  if not p or wide[name] or (ascii and (contains(name) or contains(p))) then
    push_entity(name, scored[i + 1], p)
    names[#names + 1] = name
  end
end
if #names * 8 > #scored / 2 then
  push_relations(redis.call('ZRANGE', RELS, 0, -1, 'WITHSCORES'))
else
  for _, name in ipairs(names) do
    relations_of(name)
  end
end
return {ents, rels}
