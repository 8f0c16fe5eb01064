-- search_messages: ARGV = prefix, session ('' for all), limit, query terms...
-- Okapi BM25 over the current messages, with agentmem-core's constants and formula.
-- Returns {session, message JSON, score} best first; ties by session, then position.
local sid, limit = ARGV[2], tonumber(ARGV[3])
local n, w
if sid ~= '' then
  n = redis.call('LLEN', sk(sid, 'msgs'))
  w = tonumber(redis.call('HGET', sk(sid, 'meta'), 'words') or '0')
else
  local st = redis.call('HMGET', STATS, 'docs', 'words')
  n = tonumber(st[1] or '0')
  w = tonumber(st[2] or '0')
end
if n <= 0 or limit <= 0 then
  return {}
end
local avg = math.max(w / n, 1)
local docs, order = {}, {}
for a = 4, #ARGV do
  local term = ARGV[a]
  local sids
  if sid ~= '' then
    sids = {sid}
  else
    sids = redis.call('SMEMBERS', ixkey(term))
  end
  local postings = {}
  for _, s in ipairs(sids) do
    local packed = redis.call('GET', sk(s, 't:' .. term))
    if packed then
      for idx, tf, len in string.gmatch(packed, '(%d+):(%d+):(%d+),') do
        postings[#postings + 1] = {s, idx, tonumber(tf), tonumber(len)}
      end
    end
  end
  local df = #postings
  if df > 0 then
    local idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
    for _, p in ipairs(postings) do
      local key = p[1] .. ':' .. p[2]
      local d = docs[key]
      if not d then
        d = {p[1], tonumber(p[2]), 0, p[4]}
        docs[key] = d
        order[#order + 1] = d
      end
      local tf = p[3]
      local norm = K1 * (1 - B + B * d[4] / avg)
      d[3] = d[3] + idf * tf * (K1 + 1) / (tf + norm)
    end
  end
end
-- Session ids compare by bytes, as Rust orders them (Lua's `<` follows the server's locale).
local function byte_less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
table.sort(order, function(x, y)
  if x[3] ~= y[3] then return x[3] > y[3] end
  if x[1] ~= y[1] then return byte_less(x[1], y[1]) end
  return x[2] < y[2]
end)
local out = {}
for i = 1, math.min(limit, #order) do
  local d = order[i]
  out[#out + 1] = {d[1], redis.call('LINDEX', sk(d[1], 'msgs'), d[2]), string.format('%.17g', d[3])}
end
return out
