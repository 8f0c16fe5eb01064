-- list_memories: ARGV = prefix, kind ('' for all), now (microseconds), then the scopes: ''
-- for every scope, else their count and their stored forms.
-- Returns {id, sequence, item JSON} for each item of the kind and scopes that has not
-- expired, in no particular order: the client orders by creation time (ties in insertion
-- order) and keeps the newest `limit`, so the limit applies after these filters. An id whose
-- meta is unreadable cannot be judged and is left out.
local kind, now = ARGV[2], tonumber(ARGV[3])
local scopes, forms = read_scopes(4)
-- Read the smaller side: the kind's set (or every item), or the sets of the scopes asked for
-- (disjoint, as an item has one scope).
local sources = {ORDER}
if kind ~= '' then
  sources = {kindkey(kind)}
end
if forms then
  local scoped, total = {}, 0
  for _, form in ipairs(forms) do
    scoped[#scoped + 1] = scopekey(form)
    total = total + redis.call('ZCARD', scopekey(form))
  end
  if kind == '' or total < redis.call('ZCARD', sources[1]) then
    sources = scoped
  end
end
local out = {}
for _, zset in ipairs(sources) do
  local flat = redis.call('ZRANGE', zset, 0, -1, 'WITHSCORES')
  for i = 1, #flat, 2 do
    local id = flat[i]
    local _, expires, scope, k = item_meta(id)
    if k and (kind == '' or k == kind) and (not scopes or scopes[scope])
        and is_live(expires, now) then
      out[#out + 1] = {id, flat[i + 1], redis.call('HGET', ITEMS, id)}
    end
  end
end
return out
