-- Migration 4 -> 5 (stemmed index terms), a page of memory items (after prelude.lua,
-- memory.lua and migrate_head.lua; driven by reindex.rs). ARGV[5] = the insertion sequence
-- of the page's last item ('' for none), then per item its id, its JSON as the client read
-- it, and its new index entry (as put_memory takes it). An item whose JSON is still that one
-- gets the new entry in place of its old one (its postings, word count and the counters of
-- its kind and scope follow; an item without a readable meta line is left as it is); doing
-- it twice changes nothing more. Returns {'ok'} and records the sequence as done (progress
-- field `m`) when every item was as read, else {'changed', ids of the others...} (written
-- or deleted meanwhile: the client reads them again).
local changed = {'changed'}
for a = 6, #ARGV - 2, 3 do
  local id, json, ix = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local _, _, scope, kind = item_meta(id)
  if redis.call('HGET', ITEMS, id) ~= json then
    changed[#changed + 1] = id
  elseif kind then
    local before = 0
    local old = redis.call('HGET', TERMS, id)
    if old then
      local ok, doc = pcall(cjson.decode, old)
      if ok and type(doc) == 'table' then
        if type(doc.t) == 'table' then
          for term in pairs(doc.t) do
            redis.call('HDEL', mtkey(term), id)
          end
        end
        before = tonumber(doc.l) or 0
      end
    end
    redis.call('HDEL', LENS, id)
    count(kind, scope, 0, int(index_item(id, ix) - before))
  end
end
if #changed > 1 then
  return changed
end
if ARGV[5] ~= '' then
  redis.call('HSET', MIGRATION_PROGRESS, 'm', ARGV[5])
end
return {'ok'}
