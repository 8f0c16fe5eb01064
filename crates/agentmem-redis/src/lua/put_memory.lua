-- put_memory: ARGV = prefix, id, kind, key ('' for none), created (microseconds),
-- item JSON, index JSON.
-- The item replaces the one with the same kind and key, else the one with the same id,
-- keeping that item's id and creation time. The JSON is stored byte for byte, so it cannot
-- be rewritten here: when the client's id or creation time is not the target's, the script
-- changes nothing and returns {'rebase', id, created} for the client to rebuild and retry.
-- Returns {'ok'} when stored.
local id, kind, key, created, json, ix = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local target = nil
if key ~= '' then
  target = redis.call('HGET', KEYIDX, kind .. '\n' .. key)
end
if not target and redis.call('HEXISTS', ITEMS, id) == 1 then
  target = id
end
local seq
if target then
  local target_created = item_meta(target)
  if target ~= id or target_created ~= created then
    return {'rebase', target, target_created or ''}
  end
  unindex_item(id)
  seq = redis.call('ZSCORE', ORDER, id)
else
  seq = redis.call('INCR', SEQ)
  redis.call('ZADD', ORDER, seq, id)
end
redis.call('HSET', ITEMS, id, json)
redis.call('HSET', META, id, created .. '\n' .. kind .. '\n' .. key)
redis.call('ZADD', kindkey(kind), seq, id)
if key ~= '' then
  redis.call('HSET', KEYIDX, kind .. '\n' .. key, id)
end
local doc = cjson.decode(ix)
if doc.l > 0 then
  redis.call('HSET', LENS, id, doc.l)
  for term, tf in pairs(doc.t) do
    redis.call('HSET', mtkey(term), id, tf)
  end
end
redis.call('HSET', TERMS, id, ix)
redis.call('HINCRBY', MSTATS, 'docs:' .. kind, 1)
redis.call('HINCRBY', MSTATS, 'words:' .. kind, doc.l)
return {'ok'}
