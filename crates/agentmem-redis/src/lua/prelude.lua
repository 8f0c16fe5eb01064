-- Shared head of every agentmem script: key builders and the maintenance of the
-- session index. ARGV[1] is always the store's key root: its validated prefix, or on a Redis
-- Cluster the prefix in braces (`{prefix}`, a hash tag); session ids and archive ids were
-- validated by agentmem-core (no `:`, no glob characters), and index terms are runs of
-- letters and digits, so every key built here has one meaning only. Every key built here
-- starts with the root, so on a cluster all of them lie in the slot of KEYS[1] (the schema
-- key, which the client passes so the script is routed to that slot's node).
local P = ARGV[1]
local SESSIONS = P .. ':sessions'
local STATS = P .. ':stats'
local K1, B = 1.2, 0.75

local function sk(sid, part)
  return P .. ':s:' .. sid .. ':' .. part
end

local function ixkey(term)
  return P .. ':ix:' .. term
end

-- Creates the session's meta hash when missing and records a write at `now` (microseconds,
-- as a string), never moving `updated` backwards if clocks of several clients disagree.
local function touch(sid, now)
  local meta = sk(sid, 'meta')
  redis.call('HSETNX', meta, 'created', now)
  local prev = redis.call('HGET', meta, 'updated')
  local upd = now
  if prev and tonumber(prev) > tonumber(now) then
    upd = prev
  end
  redis.call('HSET', meta, 'updated', upd)
  redis.call('ZADD', SESSIONS, upd, sid)
end

-- Runs `cmd key a1 a2 ...` over the flat list `args` in chunks: unpack() is bounded by
-- the Lua C stack.
local function chunked(cmd, key, args)
  local i, count = 0, #args
  while i < count do
    local j = math.min(i + 1000, count)
    redis.call(cmd, key, unpack(args, i + 1, j))
    i = j
  end
end

-- Appends ARGV[first ..] (message JSON, stored byte for byte) to the session's list and
-- indexes them: `docs` holds one {l = word count, t = {term = "frequency"}} per message,
-- computed by the client with agentmem-core's tokenizer (Lua knows no Unicode).
--
-- Postings are append-only strings, one per (session, term): `position:frequency:length,`
-- per message. Messages leave the list only all at once (compaction, save, delete), so a
-- posting is never removed alone, and a string costs one APPEND per distinct term of the
-- whole batch and a few bytes per posting (a hash would cost a field per posting).
local function push_messages(sid, docs, first)
  local msgs = sk(sid, 'msgs')
  local n0 = redis.call('LLEN', msgs)
  local jsons = {}
  for k = 1, #docs do
    jsons[k] = ARGV[first + k - 1]
  end
  chunked('RPUSH', msgs, jsons)
  local words = 0
  local postings, terms = {}, {}
  for k, doc in ipairs(docs) do
    if doc.l > 0 then
      local head, tail = (n0 + k - 1) .. ':', ':' .. doc.l
      for term, tf in pairs(doc.t) do
        local p = postings[term]
        if not p then
          p = {}
          postings[term] = p
          terms[#terms + 1] = term
        end
        p[#p + 1] = head .. tf .. tail
      end
      words = words + doc.l
    end
  end
  for _, term in ipairs(terms) do
    redis.call('APPEND', sk(sid, 't:' .. term), table.concat(postings[term], ',') .. ',')
    redis.call('SADD', ixkey(term), sid)
  end
  chunked('SADD', sk(sid, 'terms'), terms)
  redis.call('HINCRBY', sk(sid, 'meta'), 'words', words)
  redis.call('HINCRBY', STATS, 'docs', #docs)
  redis.call('HINCRBY', STATS, 'words', words)
end

-- (Counters are decremented by `0 - n`: Lua's `-n` is -0 for 0, which HINCRBY rejects.)
local function drop_index(sid)
  local terms = sk(sid, 'terms')
  for _, term in ipairs(redis.call('SMEMBERS', terms)) do
    redis.call('UNLINK', sk(sid, 't:' .. term))
    redis.call('SREM', ixkey(term), sid)
  end
  local meta = sk(sid, 'meta')
  local docs = redis.call('LLEN', sk(sid, 'msgs'))
  local words = tonumber(redis.call('HGET', meta, 'words') or '0')
  redis.call('UNLINK', terms)
  redis.call('HSET', meta, 'words', 0)
  redis.call('HINCRBY', STATS, 'docs', 0 - docs)
  redis.call('HINCRBY', STATS, 'words', 0 - words)
end

-- Deletes a session with its archives and index entries.
local function delete_session(sid)
  drop_index(sid)
  local archives = sk(sid, 'archives')
  for _, aid in ipairs(redis.call('LRANGE', archives, 0, -1)) do
    redis.call('UNLINK', sk(sid, 'a:' .. aid))
  end
  redis.call('UNLINK', sk(sid, 'msgs'), sk(sid, 'meta'), archives, sk(sid, 'ainfo'))
  redis.call('ZREM', SESSIONS, sid)
end

-- Adds one query term's Okapi BM25 contribution, with agentmem-core's constants, formula
-- and order of summation, to each document holding the term. `postings` has one
-- {key, tf, ...} per such document; a document met first is made by `new_doc(posting)` as
-- {..., ..., 0 (its score), its word count} and appended to `order`. The collection has `n`
-- documents of `avg` words on average.
local function bm25_term(docs, order, postings, n, avg, new_doc)
  local df = #postings
  if df == 0 then
    return
  end
  local idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
  for _, p in ipairs(postings) do
    local d = docs[p[1]]
    if not d then
      d = new_doc(p)
      docs[p[1]] = d
      order[#order + 1] = d
    end
    local tf = p[2]
    local norm = K1 * (1 - B + B * d[4] / avg)
    d[3] = d[3] + idf * tf * (K1 + 1) / (tf + norm)
  end
end
