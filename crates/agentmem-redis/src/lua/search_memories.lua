-- search_memories: ARGV = prefix, kind ('' for all), limit, query terms...
-- Okapi BM25 over the items (of the kind), as agentmem-core ranks them.
-- Returns {item JSON, score} best first; ties in insertion order.
local kind, limit = ARGV[2], tonumber(ARGV[3])
local n, w = 0, 0
local st = redis.call('HGETALL', MSTATS)
for i = 1, #st, 2 do
  local field, value = st[i], tonumber(st[i + 1])
  local what, k = string.match(field, '^(%a+):(.*)$')
  if kind == '' or k == kind then
    if what == 'docs' then n = n + value else w = w + value end
  end
end
if n <= 0 or limit <= 0 then
  return {}
end
local avg = math.max(w / n, 1)
local kinds = {}
local function kind_of(id)
  local k = kinds[id]
  if k == nil then
    local _, found = item_meta(id)
    k = found or ''
    kinds[id] = k
  end
  return k
end
local docs, order = {}, {}
local function new_doc(p)
  return {p[1], tonumber(redis.call('ZSCORE', ORDER, p[1]) or '0'), 0,
          tonumber(redis.call('HGET', LENS, p[1]) or '0')}
end
for a = 4, #ARGV do
  local flat = redis.call('HGETALL', mtkey(ARGV[a]))
  local postings = {}
  for i = 1, #flat, 2 do
    if kind == '' or kind_of(flat[i]) == kind then
      postings[#postings + 1] = {flat[i], tonumber(flat[i + 1])}
    end
  end
  bm25_term(docs, order, postings, n, avg, new_doc)
end
table.sort(order, function(x, y)
  if x[3] ~= y[3] then return x[3] > y[3] end
  return x[2] < y[2]
end)
local out = {}
for i = 1, math.min(limit, #order) do
  local d = order[i]
  out[#out + 1] = {redis.call('HGET', ITEMS, d[1]), string.format('%.17g', d[3])}
end
return out
