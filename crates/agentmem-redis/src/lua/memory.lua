-- Shared head of the memory-item scripts (after prelude.lua).
-- Memory ids are free text, so they are only ever hash fields and set members, never part
-- of a key name. A scope is kept in agentmem-core's stored form (`MemoryScope::stored_form`:
-- '' for the global scope, else validated names tagged with ':' and joined by '/'), which
-- never holds '\n' or a glob character, so it serves in hash fields and in key names alike.
-- Times are microseconds since the epoch, as decimal strings. Lua numbers and sorted-set
-- scores (doubles) hold them exactly up to 2^53 (the year 2255); comparisons with `now`
-- stay right beyond that, because `now` is below 2^53 and rounding keeps the order.
local ITEMS = P .. ':mem:items'      -- hash: id -> item JSON, byte for byte
local META = P .. ':mem:meta'        -- hash: id -> created "\n" expires "\n" scope "\n" kind "\n" key
local ORDER = P .. ':mem:order'      -- zset: id -> insertion sequence
local SEQ = P .. ':mem:seq'          -- counter behind ORDER
local KEYIDX = P .. ':mem:keys'      -- hash: scope "\n" kind "\n" key -> id
local EXPIRES = P .. ':mem:expires'  -- zset: id -> expiry time, for the items that expire
local UPDATED = P .. ':mem:updated'  -- zset: id -> last update time
local LENS = P .. ':mem:lens'        -- hash: id -> word count
local TERMS = P .. ':mem:terms'      -- hash: id -> index JSON, to undo the postings
-- hash: docs:<kind>, words:<kind> over the whole store, and docs:<kind>:<scope>,
-- words:<kind>:<scope> per scope (dropped when the scope has no item of the kind left)
local MSTATS = P .. ':mem:stats'

local kindkey = keys_under(P .. ':mem:kind:')

-- Sorted set: ids of the scope's items -> insertion sequence (`P:mem:scope:` for global).
local scopekey = keys_under(P .. ':mem:scope:')

local mtkey = keys_under(P .. ':mem:t:')

-- created, expires ('' for never), scope, kind, key ('' for none) of a stored item, or nil.
local function item_meta(id)
  local m = redis.call('HGET', META, id)
  if not m then
    return nil
  end
  return string.match(m, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
end

-- Whether an item expiring at `expires` ('' for never) is still there at `now` (a number).
-- The client stores the expiry rounded up to the microsecond, so this agrees exactly with
-- `MemoryItem::is_expired_at` (expired when the expiry time <= now).
local function is_live(expires, now)
  return expires == '' or tonumber(expires) > now
end

-- The KEYIDX field of a scope, kind and key.
local function keyfield(scope, kind, key)
  return scope .. '\n' .. kind .. '\n' .. key
end

-- Adds `docs` items of `words` words to the statistics of the kind (whole store and scope).
local function count(kind, scope, docs, words)
  redis.call('HINCRBY', MSTATS, 'docs:' .. kind, docs)
  redis.call('HINCRBY', MSTATS, 'words:' .. kind, words)
  local sdocs, swords = 'docs:' .. kind .. ':' .. scope, 'words:' .. kind .. ':' .. scope
  if redis.call('HINCRBY', MSTATS, sdocs, docs) > 0 then
    redis.call('HINCRBY', MSTATS, swords, words)
  else
    redis.call('HDEL', MSTATS, sdocs, swords)
  end
end

-- Indexes item `id` by `ix`, its index JSON as the client sends it (`l`: the word count,
-- `t`: term -> frequency): its length, its postings, and `ix` itself (to undo them). The
-- item must hold no postings yet, nor a length (an item of no words gets none). Returns the
-- word count, for `count`.
local function index_item(id, ix)
  local doc = cjson.decode(ix)
  if doc.l > 0 then
    redis.call('HSET', LENS, id, doc.l)
    for term, tf in pairs(doc.t) do
      redis.call('HSET', mtkey(term), id, tf)
    end
  end
  redis.call('HSET', TERMS, id, ix)
  return doc.l
end

-- Removes an item from every index (not from ITEMS, META or ORDER).
local function unindex_item(id)
  local _, _, scope, kind, key = item_meta(id)
  if not kind then
    return
  end
  redis.call('ZREM', kindkey(kind), id)
  redis.call('ZREM', scopekey(scope), id)
  redis.call('ZREM', EXPIRES, id)
  redis.call('ZREM', UPDATED, id)
  local field = keyfield(scope, kind, key)
  if key ~= '' and redis.call('HGET', KEYIDX, field) == id then
    redis.call('HDEL', KEYIDX, field)
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
  -- (Counters are decremented by `0 - n`: Lua's `-n` is -0 for 0, which HINCRBY rejects.)
  count(kind, scope, -1, 0 - len)
end

-- Deletes an item with its index entries.
local function delete_item(id)
  unindex_item(id)
  redis.call('HDEL', ITEMS, id)
  redis.call('HDEL', META, id)
  redis.call('ZREM', ORDER, id)
end

-- Reads the scope selection at ARGV[at]: '' for every scope (returns nil and the next
-- position), else a count n and n stored forms (returns them as a set, as a list, and the
-- position after them).
local function read_scopes(at)
  if ARGV[at] == '' then
    return nil, nil, at + 1
  end
  local n = tonumber(ARGV[at])
  local set, list = {}, {}
  for i = at + 1, at + n do
    set[ARGV[i]] = true
    list[#list + 1] = ARGV[i]
  end
  return set, list, at + n + 1
end
