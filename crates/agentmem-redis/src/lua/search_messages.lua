-- search_messages: ARGV = prefix, session ('' for all), limit, now, query terms...
-- Okapi BM25 over the current messages of the sessions there at `now`, with agentmem-core's
-- constants and formula. Returns {session, message JSON, score} best first; ties by session,
-- then position. Entries of `P:ix:W` whose session is gone (expired by the server) or whose
-- current epoch lacks `W` are removed as they are met.
local sid, limit, now = ARGV[2], tonumber(ARGV[3]), ARGV[4]
reap(now, REAP)
local n, w
-- Each session's current index epoch (postings of other epochs are retired), or false for
-- a session that is not there at `now`; and whether its meta exists at all.
local epochs, exists = {}, {}
local function epoch(s)
  local e = epochs[s]
  if e == nil then
    local m = redis.call('HMGET', sk(s, 'meta'), 'created', 'epoch', 'expires')
    exists[s] = m[1] and true or false
    if m[1] and (not m[3] or tonumber(m[3]) > tonumber(now)) then
      e = tonumber(m[2] or '0')
    else
      e = false
    end
    epochs[s] = e
  end
  return e
end
if sid ~= '' then
  if not epoch(sid) then
    return {}
  end
  n = redis.call('LLEN', sk(sid, 'msgs'))
  w = tonumber(redis.call('HGET', sk(sid, 'meta'), 'words') or '0')
else
  local st = redis.call('HMGET', STATS, 'docs', 'words')
  n = tonumber(st[1] or '0')
  w = tonumber(st[2] or '0')
end
if limit <= 0 or (sid ~= '' and n <= 0) then
  return {}
end
-- With no current message anywhere the terms' entries are still read: only to clear stale
-- ones (no session holds a posting then).
local avg = math.max(w / math.max(n, 1), 1)
local docs, order = {}, {}
local function new_doc(p)
  return {p[3], tonumber(p[4]), 0, p[5]}
end
for a = 5, #ARGV do
  local term = ARGV[a]
  local sids
  if sid ~= '' then
    sids = {sid}
  else
    sids = redis.call('SMEMBERS', ixkey(term))
  end
  -- {session:index, tf, session, index, word count} per message holding the term. A
  -- session listed in `P:ix:W` whose current epoch lacks the term has no postings string.
  local postings = {}
  for _, s in ipairs(sids) do
    local e = epoch(s)
    local packed = e and redis.call('GET', tkey(s, e, term))
    if packed then
      for _, p in ipairs(parse_postings(packed)) do
        postings[#postings + 1] = {s .. ':' .. p[1], tonumber(p[2]), s, p[1], tonumber(p[3])}
      end
    elseif sid == '' and (e or not exists[s]) then
      -- Stale: the session is gone, or its current epoch lacks the term (a rewind took
      -- it out, or a new session has the id of an expired one). A session expired at `now`
      -- but not yet buried keeps its entry: burying it removes that.
      redis.call('SREM', ixkey(term), s)
    end
  end
  if n > 0 then
    bm25_term(docs, order, postings, n, avg, new_doc)
  end
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
