-- put_memory: ARGV = prefix, id, kind, scope (stored form), key ('' for none), created,
-- updated, expires ('' for never), now (times in microseconds), item JSON, index JSON.
-- The item replaces the one with the same scope, kind and key, else the one with the same
-- id, keeping that item's id and creation time. The JSON is stored byte for byte, so it
-- cannot be rewritten here: when the client's id or creation time is not the target's, the
-- script stores nothing and returns {'rebase', id, created} for the client to rebuild and
-- retry. An expired item holding the scope, kind and key is deleted first (it is gone for
-- every reader already), so the new item does not take it over; that is the only change a
-- 'rebase' reply may leave behind. Returns {'ok'} when stored.
local id, kind, scope, key = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local created, updated, expires, now = ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9])
local json, ix = ARGV[10], ARGV[11]
local field = keyfield(scope, kind, key)
local target = nil
if key ~= '' then
  target = redis.call('HGET', KEYIDX, field)
  if target then
    local _, target_expires = item_meta(target)
    if target_expires and not is_live(target_expires, now) then
      delete_item(target)
      target = nil
    end
  end
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
redis.call('HSET', META, id, created .. '\n' .. expires .. '\n' .. scope .. '\n' .. kind .. '\n' .. key)
redis.call('ZADD', kindkey(kind), seq, id)
redis.call('ZADD', scopekey(scope), seq, id)
if expires ~= '' then
  redis.call('ZADD', EXPIRES, expires, id)
end
redis.call('ZADD', UPDATED, updated, id)
if key ~= '' then
  redis.call('HSET', KEYIDX, field, id)
end
count(kind, scope, 1, index_item(id, ix))
return {'ok'}
