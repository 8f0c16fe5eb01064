-- search_memories: ARGV = prefix, kinds searched (the one asked for, or every kind; separated
-- by spaces), limit, now (microseconds), then the scopes ('' for every scope, else their
-- count and their stored forms), then the query terms.
-- Okapi BM25 over the items of those kinds and scopes that have not expired, as
-- agentmem-core ranks them. Returns {item JSON, score} best first; ties in insertion order.
local limit, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local kinds, kindlist = {}, {}
for k in string.gmatch(ARGV[2], '%S+') do
  kinds[k] = true
  kindlist[#kindlist + 1] = k
end
local scopes, forms, first_term = read_scopes(5)
-- The collection (item count and words, for the IDF and the average length) is the items of
-- the kinds and scopes searched, from the counters: exact, except that an expired item still
-- counts there until a purge deletes it (its postings are skipped below, so it is never a hit).
local fields = {}
for _, k in ipairs(kindlist) do
  if forms then
    for _, form in ipairs(forms) do
      fields[#fields + 1] = 'docs:' .. k .. ':' .. form
      fields[#fields + 1] = 'words:' .. k .. ':' .. form
    end
  else
    fields[#fields + 1] = 'docs:' .. k
    fields[#fields + 1] = 'words:' .. k
  end
end
local n, w = 0, 0
local st = redis.call('HMGET', MSTATS, unpack(fields))
for i = 1, #st, 2 do
  n = n + tonumber(st[i] or '0')
  w = w + tonumber(st[i + 1] or '0')
end
if n <= 0 or limit <= 0 then
  return {}
end
local avg = math.max(w / n, 1)
-- Whether an item is searched: of the kinds and scopes, not expired (an id whose meta is
-- unreadable cannot be judged and is left out). Memoised per id.
local passes = {}
local function searched(id)
  local p = passes[id]
  if p == nil then
    local _, expires, scope, k = item_meta(id)
    p = (k and kinds[k] and (not scopes or scopes[scope]) and is_live(expires, now)) or false
    passes[id] = p
  end
  return p
end
local docs, order = {}, {}
local function new_doc(p)
  return {p[1], tonumber(redis.call('ZSCORE', ORDER, p[1]) or '0'), 0,
          tonumber(redis.call('HGET', LENS, p[1]) or '0')}
end
for a = first_term, #ARGV do
  local flat = redis.call('HGETALL', mtkey(ARGV[a]))
  local postings = {}
  for i = 1, #flat, 2 do
    if searched(flat[i]) then
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
