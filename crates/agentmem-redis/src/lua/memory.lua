-- Shared head of the memory-item scripts (after prelude.lua).
-- Memory ids are free text, so they are only ever hash fields and set members, never part
-- of a key name.
local ITEMS = P .. ':mem:items'   -- hash: id -> item JSON, byte for byte
local META = P .. ':mem:meta'     -- hash: id -> created "\n" kind "\n" key
local ORDER = P .. ':mem:order'   -- zset: id -> insertion sequence
local SEQ = P .. ':mem:seq'       -- counter behind ORDER
local KEYIDX = P .. ':mem:keys'   -- hash: kind "\n" key -> id
local LENS = P .. ':mem:lens'     -- hash: id -> word count
local TERMS = P .. ':mem:terms'   -- hash: id -> index JSON, to undo the postings
local MSTATS = P .. ':mem:stats'  -- hash: docs:<kind>, words:<kind>

local function kindkey(kind)
  return P .. ':mem:kind:' .. kind
end

local function mtkey(term)
  return P .. ':mem:t:' .. term
end

-- created, kind, key ('' for none) of a stored item, or nil.
local function item_meta(id)
  local m = redis.call('HGET', META, id)
  if not m then
    return nil
  end
  return string.match(m, '^([^\n]*)\n([^\n]*)\n(.*)$')
end

-- Removes an item from every index (not from ITEMS, META or ORDER).
local function unindex_item(id)
  local _, kind, key = item_meta(id)
  if not kind then
    return
  end
  redis.call('ZREM', kindkey(kind), id)
  if key ~= '' and redis.call('HGET', KEYIDX, kind .. '\n' .. key) == id then
    redis.call('HDEL', KEYIDX, kind .. '\n' .. key)
  end
  local ix = redis.call('HGET', TERMS, id)
  local len = 0
  if ix then
    local doc = cjson.decode(ix)
    for term in pairs(doc.t) do
      redis.call('HDEL', mtkey(term), id)
    end
    len = doc.l
  end
  redis.call('HDEL', TERMS, id)
  redis.call('HDEL', LENS, id)
  redis.call('HINCRBY', MSTATS, 'docs:' .. kind, -1)
  redis.call('HINCRBY', MSTATS, 'words:' .. kind, 0 - len)
end
