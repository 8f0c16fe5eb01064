-- Shared head of the knowledge-graph scripts (src/graph.rs; the layout is in the README).
-- ARGV[1] is the store's key root: its prefix, or on a Redis Cluster `{prefix}`, a hash tag,
-- so every key built here lies in the slot of KEYS[1] (the schema key).
--
-- Entity names and types, observations and relation types are free text without NUL (the
-- client refuses NUL). Names enter key names only through `esc` (lua/shared.lua), and only
-- those of the relation indexes; the texts themselves are kept as members and values, so
-- reads return them exactly. One counter
-- numbers the entities and relations created; the numbers are the scores that keep creation
-- order, so a deleted and re-created item goes to the end.
local P = ARGV[1]
-- String: the last number given out.
local SEQ = P .. ':g:seq'
-- Sorted set: entity name -> its number.
local ENTS = P .. ':g:ents'
-- Set: the names of entities with a character beyond ASCII in a text (name, type, an
-- observation, kept until the entity is deleted), the client says which: a search decides
-- the others by ASCII rules, exactly, and hands these to the client.
local WIDE = P .. ':g:wide'
-- Sorted set: `from NUL to NUL type` of every relation -> its number.
local RELS = P .. ':g:rels'

-- String: the type of entity number `id` (its score in ENTS, as Redis writes it), then
-- `NUL observation` for each observation in the order added: what reads return, one MGET for
-- many entities (APPEND adds to it). Keyed by number, so reads build key names without
-- escaping, and a re-created entity starts afresh.
local ekey = keys_under(P .. ':g:e:')

-- Set: the observations of entity number `id`, the duplicate check of additions and
-- deletions. Gone with the entity, or by itself when its last observation is deleted.
local okey = keys_under(P .. ':g:o:')

-- Sorted set: the relations (RELS members) with `name` as from or to -> their numbers, the
-- entity stored or not (delete_entities finds them here, without a scan).
local function rkey(name)
  return P .. ':g:r:' .. esc(name)
end

-- The counter, read on first use and advanced here; `save_seq` writes it back.
local seq
local function next_seq()
  if not seq then
    seq = tonumber(redis.call('GET', SEQ) or '0')
  end
  seq = seq + 1
  return seq
end

local function save_seq()
  if seq then
    redis.call('SET', SEQ, string.format('%d', seq))
  end
end

-- The RELS member of the relation at ARGV[i], ARGV[i + 1], ARGV[i + 2] (from, to, type).
local function relation_at(i)
  return ARGV[i] .. Z .. ARGV[i + 1] .. Z .. ARGV[i + 2]
end

-- The parts of `s` between NULs (`a NUL b NUL c` as {a, b, c}; `a` as {a}).
local function split_all(s)
  local parts, from = {}, 1
  while true do
    local j = string.find(s, Z, from, true)
    if not j then
      parts[#parts + 1] = string.sub(s, from)
      return parts
    end
    parts[#parts + 1] = string.sub(s, from, j - 1)
    from = j + 1
  end
end
