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
-- Sorted set, every score 0: every session id, so ZRANGEBYLEX lists them in id order.
local IDS = P .. ':ids'
-- Sorted set: session id -> expiry time (microseconds), for the sessions that expire.
local EXPIRY = P .. ':expiry'
-- Hash: session id -> "docs words epoch", what an expiring session adds to STATS (its keys
-- may vanish with the server's expiry, and this is what is then taken off the counters) and
-- its newest index epoch (its terms sets, which carry no expiry, are found by it then).
local XCOUNTS = P .. ':xcounts'
-- How many dead sessions' remains a script clears on its way (`reap`).
local REAP = 16
local K1, B = 1.2, 0.75

local function sk(sid, part)
  return P .. ':s:' .. sid .. ':' .. part
end

local ixkey = keys_under(P .. ':ix:')

-- The session's search index lives in epochs: every save and compaction starts a new one,
-- so the old messages' postings stop being read at once (O(1)) and are deleted later, a
-- bounded number per write (`collect`), or all at once when the session is deleted. Epoch 0
-- keeps the key names of schema version 2, whose data is therefore epoch 0 of version 3.
local function tkey(sid, e, term)
  if e == 0 then
    return sk(sid, 't:' .. term)
  end
  return sk(sid, 'e' .. e .. ':t:' .. term)
end

local function termskey(sid, e)
  if e == 0 then
    return sk(sid, 'terms')
  end
  return sk(sid, 'e' .. e .. ':terms')
end

-- An integer as Redis takes it (never `-0` or an exponent).
local function int(n)
  return string.format('%d', n)
end

-- The meta fields a write needs, in one read: {created, updated, epoch, words, gc, expires}.
local function read_meta(sid)
  return redis.call('HMGET', sk(sid, 'meta'), 'created', 'updated', 'epoch', 'words', 'gc',
    'expires')
end

-- Whether a session whose meta `read_meta` read is there at `now` (microseconds): it exists
-- and has no expiry or one later than `now` (expired when the expiry time <= now).
local function alive(m, now)
  return m[1] and (not m[6] or tonumber(m[6]) > tonumber(now)) or false
end

-- Records a write at `now` (microseconds, as a string) in the session's meta hash (with
-- `fields`, a flat list of more fields to set) and the sessions index, creating the meta hash
-- when missing and never moving `updated` backwards if clocks of several clients disagree.
-- `m` is what `read_meta` returned before the write.
local function touch(sid, now, m, fields)
  local upd = now
  if m[2] and tonumber(m[2]) > tonumber(now) then
    upd = m[2]
  end
  fields[#fields + 1] = 'updated'
  fields[#fields + 1] = upd
  if not m[1] then
    fields[#fields + 1] = 'created'
    fields[#fields + 1] = now
  end
  redis.call('HSET', sk(sid, 'meta'), unpack(fields))
  redis.call('ZADD', SESSIONS, upd, sid)
  if not m[1] then
    redis.call('ZADD', IDS, 0, sid)
  end
end

-- Indexes in epoch `e` the `ndocs` messages at positions `n0`.. of the session's list.
-- ARGV[first] is the messages' term count (every occurrence), ARGV[first + 1] the number of
-- distinct terms, then one (term, postings) pair per term: the client (which tokenizes and
-- stems with agentmem-core, as Lua knows neither Unicode nor stems) has grouped the postings
-- per term, `k:frequency:length,` for the k-th message of the batch. `fresh` says the epoch
-- has no terms yet (no need to ask which are known); `exp` is the session's expiry (ms) or
-- nil.
-- Returns the term count and the number of distinct terms.
--
-- Postings are append-only strings, one per (session, epoch, term), so a batch costs one
-- APPEND per distinct term. Positions are the batch's own, placed after the `n0` messages
-- before it: as they are when `n0` is 0, with the position in front for a single message,
-- else behind a marker `@n0,` that a search adds to the positions up to the next marker
-- (`@0,`, which ends the batch). Known terms skip the sessions index `P:ix:W` (the session
-- is in it already).
local function index_batch(sid, e, first, n0, ndocs, fresh, exp)
  local words, nterms = tonumber(ARGV[first]), tonumber(ARGV[first + 1])
  if nterms == 0 then
    return words, 0
  end
  local t0 = first + 2
  local terms = {}
  for j = 1, nterms do
    terms[j] = ARGV[t0 + 2 * j - 2]
  end
  local tk = termskey(sid, e)
  local known = {}
  if not fresh then
    known = chunked('SMISMEMBER', tk, terms, true)
  end
  local new = {}
  for j, term in ipairs(terms) do
    local post = ARGV[t0 + 2 * j - 1]
    if n0 > 0 then
      if ndocs == 1 then
        post = n0 .. ':' .. string.sub(post, 3)
      else
        post = '@' .. n0 .. ',' .. post .. '@0,'
      end
    end
    local key = tkey(sid, e, term)
    redis.call('APPEND', key, post)
    if exp then
      redis.call('PEXPIREAT', key, exp)
    end
    if known[j] ~= 1 then
      new[#new + 1] = term
      redis.call('SADD', ixkey(term), sid)
    end
  end
  chunked('SADD', tk, new)
  return words, nterms
end

-- Appends ARGV[first + 2 + 2 * terms ..] (message JSON, stored byte for byte) to the
-- session's list and indexes them in epoch `e` (`index_batch`, whose arguments start at
-- ARGV[first]). Returns the list's new length, the term count and the number of distinct
-- terms.
local function push_messages(sid, e, first, fresh, exp)
  local m0 = first + 2 + 2 * tonumber(ARGV[first + 1])
  local ndocs = #ARGV - m0 + 1
  local jsons = {}
  for k = 1, ndocs do
    jsons[k] = ARGV[m0 + k - 1]
  end
  local msgs = sk(sid, 'msgs')
  local len = chunked('RPUSH', msgs, jsons) or redis.call('LLEN', msgs)
  local words, nterms = index_batch(sid, e, first, len - ndocs, ndocs, fresh, exp)
  return len, words, nterms
end

-- The messages and words a session's current epoch holds, taken off the counters of all
-- sessions (`docs` messages, `m` its meta as `read_meta` read it).
local function uncount(docs, m)
  redis.call('HINCRBY', STATS, 'docs', int(0 - docs))
  redis.call('HINCRBY', STATS, 'words', int(0 - tonumber(m[4] or '0')))
end

-- Ends the session's current epoch (its index stops being read) and returns the next one,
-- with the meta fields to set: O(1). An epoch without terms has no index keys and is kept.
-- The caller empties or renames the message list and uncounts it.
local function retire(sid, m)
  local e = tonumber(m[3] or '0')
  if redis.call('EXISTS', termskey(sid, e)) == 0 then
    return e, {'epoch', int(e), 'words', '0'}
  end
  redis.call('RPUSH', sk(sid, 'gc'), e)
  return e + 1, {'epoch', int(e + 1), 'words', '0', 'gc', '1'}
end

-- Deletes up to `budget` index entries of the session's retired epochs: each term's posting
-- string of that epoch, and the session's entry in `P:ix:W` unless the current epoch `e`
-- holds the term too. Clears the meta's `gc` flag once none are left.
local function collect(sid, e, budget)
  local gc = sk(sid, 'gc')
  local current = termskey(sid, e)
  while budget > 0 do
    local old = redis.call('LINDEX', gc, 0)
    if not old then
      redis.call('HDEL', sk(sid, 'meta'), 'gc')
      return
    end
    old = tonumber(old)
    local terms = redis.call('SPOP', termskey(sid, old), budget)
    if #terms > 0 then
      local keep = chunked('SMISMEMBER', current, terms, true)
      local stale = {}
      for i, term in ipairs(terms) do
        stale[i] = tkey(sid, old, term)
        if keep[i] == 0 then
          redis.call('SREM', ixkey(term), sid)
        end
      end
      redis.call('UNLINK', unpack(stale))
    end
    if #terms < budget then
      redis.call('LPOP', gc)
    end
    budget = budget - #terms
  end
end

-- How many retired index entries a write that indexed `nterms` terms collects: at least as
-- many as it wrote, so the retired entries shrink while a session is written.
local function budget(nterms)
  return math.min(64 + nterms, 1000)
end

-- The label index: sorted sets (every score 0, so ZRANGEBYLEX lists them in id order) of
-- the sessions of an owner, and of the sessions carrying a tag key=value. Labels are free
-- text, so their key names hold their SHA-1 (find_sessions checks every candidate against
-- the session's own labels, so a collision could never show a wrong session).
local function ownerkey(owner)
  return P .. ':lab:o:' .. redis.sha1hex(owner)
end

local function tagkey(key, value)
  -- '\0' cannot occur in a label (no control characters), so the pair has one reading.
  return P .. ':lab:t:' .. redis.sha1hex(key .. '\0' .. value)
end

-- The tags of a meta hash's `tags` field (a JSON object, absent when there are none).
local function decode_tags(json)
  if not json then
    return {}
  end
  local ok, t = pcall(cjson.decode, json)
  if ok and type(t) == 'table' then
    return t
  end
  return {}
end

-- Takes a session out of the label index (its meta still holds its labels).
local function unlabel(sid)
  local l = redis.call('HMGET', sk(sid, 'meta'), 'owner', 'tags')
  if l[1] then
    redis.call('ZREM', ownerkey(l[1]), sid)
  end
  for k, v in pairs(decode_tags(l[2])) do
    if type(k) == 'string' and type(v) == 'string' then
      redis.call('ZREM', tagkey(k, v), sid)
    end
  end
end

-- Takes epoch `e` of a session out of the search index: its postings, its members of the
-- word sets `P:ix:W` and its terms set (absent when it has no words).
local function unindex_epoch(sid, e)
  local tk = termskey(sid, e)
  local terms = redis.call('SMEMBERS', tk)
  for _, term in ipairs(terms) do
    redis.call('SREM', ixkey(term), sid)
    redis.call('UNLINK', tkey(sid, e, term))
  end
  if #terms > 0 then
    redis.call('UNLINK', tk)
  end
end

-- Takes a session off the store-wide lists: SESSIONS, IDS, EXPIRY and its counts in XCOUNTS.
local function unlist(sid)
  redis.call('ZREM', SESSIONS, sid)
  redis.call('ZREM', IDS, sid)
  redis.call('ZREM', EXPIRY, sid)
  redis.call('HDEL', XCOUNTS, sid)
end

-- Deletes a session with its archives, every epoch's index entries and its labels.
local function delete_session(sid)
  local meta = sk(sid, 'meta')
  local m = read_meta(sid)
  unlabel(sid)
  local msgs = sk(sid, 'msgs')
  uncount(redis.call('LLEN', msgs), m)
  local gc = sk(sid, 'gc')
  local epochs = redis.call('LRANGE', gc, 0, -1)
  epochs[#epochs + 1] = m[3] or '0'
  for _, e in ipairs(epochs) do
    unindex_epoch(sid, tonumber(e))
  end
  local archives = sk(sid, 'archives')
  for _, aid in ipairs(redis.call('LRANGE', archives, 0, -1)) do
    redis.call('UNLINK', sk(sid, 'a:' .. aid))
  end
  redis.call('UNLINK', msgs, meta, archives, sk(sid, 'ainfo'), gc)
  unlist(sid)
end

-- Removes an expired session: all of it while its meta is still there (the server deletes
-- the keys at the millisecond after the expiry; the client's clock may be ahead), else what
-- the server's expiry left behind: its members of SESSIONS, IDS, EXPIRY, its counts in
-- STATS and its words in the search index (`P:ix:W`, through its terms sets). Entries of
-- the label index are left to the lookups that meet them.
local function bury(sid)
  if redis.call('EXISTS', sk(sid, 'meta')) == 1 then
    delete_session(sid)
    return
  end
  local c = redis.call('HGET', XCOUNTS, sid)
  if c then
    local d, w = string.match(c, '^(%d+) (%d+)')
    if d then
      redis.call('HINCRBY', STATS, 'docs', int(0 - tonumber(d)))
      redis.call('HINCRBY', STATS, 'words', int(0 - tonumber(w)))
    end
    -- The words of epochs 0 to the last, named by their terms sets (which carry no expiry);
    -- counts written before the epoch was recorded leave the words to the searches.
    local last = string.match(c, '^%d+ %d+ (%d+)$')
    if last then
      for e = 0, tonumber(last) do
        unindex_epoch(sid, e)
      end
    end
  end
  unlist(sid)
end

-- Buries up to `budget` sessions expired at `now`; returns how many.
local function reap(now, budget)
  local dead = redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', now, 'LIMIT', 0, budget)
  for _, sid in ipairs(dead) do
    bury(sid)
  end
  return #dead
end

-- The meta of a session about to be written or changed (see `read_meta`), after burying it
-- if it has expired at `now`: a write to an expired session starts a new one.
local function settle(sid, now)
  local m = read_meta(sid)
  if (m[1] and not alive(m, now)) or (not m[1] and redis.call('ZSCORE', EXPIRY, sid)) then
    bury(sid)
    m = read_meta(sid)
  end
  return m
end

-- The start of a write to session `sid` at `now`: buries up to REAP expired sessions on the
-- way, then returns the session's meta as `settle` does.
local function begin_write(sid, now)
  reap(now, REAP)
  return settle(sid, now)
end

-- The millisecond at which the server deletes a session expiring at `expires` (microseconds,
-- a string): the first one not before it; nil when `expires` is nil or false.
local function pexp(expires)
  if not expires then
    return nil
  end
  return int(math.ceil(tonumber(expires) / 1000))
end

-- Sets the server's expiry of every key of the session to `ms` (PERSIST when nil).
local function expire_all(sid, ms)
  local function set(key)
    if ms then
      redis.call('PEXPIREAT', key, ms)
    else
      redis.call('PERSIST', key)
    end
  end
  for _, part in ipairs({'meta', 'msgs', 'archives', 'ainfo', 'gc'}) do
    set(sk(sid, part))
  end
  for _, aid in ipairs(redis.call('LRANGE', sk(sid, 'archives'), 0, -1)) do
    set(sk(sid, 'a:' .. aid))
  end
  local epochs = redis.call('LRANGE', sk(sid, 'gc'), 0, -1)
  epochs[#epochs + 1] = redis.call('HGET', sk(sid, 'meta'), 'epoch') or '0'
  for _, e in ipairs(epochs) do
    e = tonumber(e)
    local tk = termskey(sid, e)
    for _, term in ipairs(redis.call('SMEMBERS', tk)) do
      set(tkey(sid, e, term))
    end
    -- Never expires: it is how `bury` finds the words once the rest is gone.
    redis.call('PERSIST', tk)
  end
end

-- After a write to a session that expires (`m` as `read_meta` read it before the write):
-- records what it now counts in STATS (`docs` messages of `words` words) and its epoch `e`,
-- and gives the keys a write may have created the session's expiry. The postings were given
-- it as they were written (`push_messages`); the terms sets never get one (see `bury`).
local function track(sid, m, e, docs, words)
  if not m[6] then
    return
  end
  redis.call('HSET', XCOUNTS, sid, int(docs) .. ' ' .. int(words) .. ' ' .. int(e))
  local ms = pexp(m[6])
  for _, part in ipairs({'meta', 'msgs', 'archives', 'ainfo', 'gc'}) do
    redis.call('PEXPIREAT', sk(sid, part), ms)
  end
end

-- A session's summary: {id, message count, created, updated, title, owner, tags JSON,
-- expires}, false for what is absent.
local function info_row(sid)
  local f = redis.call('HMGET', sk(sid, 'meta'), 'created', 'updated', 'title', 'owner',
    'tags', 'expires')
  return {sid, redis.call('LLEN', sk(sid, 'msgs')), f[1], f[2], f[3], f[4], f[5], f[6]}
end

-- How many messages list `key` (of `len` messages) holds up to and including the last one
-- whose JSON starts with `prefix` (`{"id":"…",`: serde writes a message's id first), or nil
-- when none does.
local function count_through(key, len, prefix)
  local hi = len - 1
  while hi >= 0 do
    local lo = math.max(0, hi - 999)
    local chunk = redis.call('LRANGE', key, lo, hi)
    for i = #chunk, 1, -1 do
      if string.sub(chunk[i], 1, #prefix) == prefix then
        return lo + i
      end
    end
    hi = lo - 1
  end
  return nil
end

-- The postings of a string (see index_batch) as {position, frequency, length} triples,
-- positions absolute.
local function parse_postings(packed)
  local out = {}
  local base = 0
  for at, idx, tf, len in string.gmatch(packed, '(@?)(%d+):?(%d*):?(%d*),') do
    if at == '@' then
      base = tonumber(idx)
    else
      out[#out + 1] = {base + tonumber(idx), tf, len}
    end
  end
  return out
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
