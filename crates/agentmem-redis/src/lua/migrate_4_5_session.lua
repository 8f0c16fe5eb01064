-- Migration 4 -> 5 (stemmed index terms), one session's part (after prelude.lua and
-- migrate_head.lua; driven by reindex.rs). The client reads the session's messages a page at
-- a time and sends each page's index, built with stemmed terms (see index_batch); the
-- first page starts a new index epoch (retiring the old one as a save does), the others add
-- to it, then 'finish' deletes the retired postings. The messages themselves are not
-- touched, nor the session's update time. ARGV[5] is the step:
--   'page', session, now, position of the page's first message, messages in the page, the
--     list's length, the epoch, and the meta's `updated` ('' for none) the client read
--     (for the first page the epoch before the rebuild, for the others the one the first
--     page returned), then the page's index (words, number of terms, term/postings pairs).
--     Returns {'ok', epoch}; {'gone'} when the session does not exist (an expired one is
--     buried); {'changed'} when it is not as the client read it (another client wrote to
--     it, or a page is out of turn: the meta's `reindexed` counts the messages indexed so
--     far), and the client starts the session over.
--   'finish', session, page budget: deletes up to that many retired index entries; returns
--     {'more'} while some are left, else records the session as done (progress field `s`)
--     and returns {'ok'}.
local op, sid = ARGV[5], ARGV[6]
local meta = sk(sid, 'meta')
if op == 'finish' then
  local m = read_meta(sid)
  if m[1] and m[5] then
    collect(sid, tonumber(m[3] or '0'), tonumber(ARGV[7]))
    if redis.call('HEXISTS', meta, 'gc') == 1 then
      return {'more'}
    end
  end
  redis.call('HDEL', meta, 'reindexed')
  redis.call('HSET', MIGRATION_PROGRESS, 's', sid)
  return {'ok'}
end

local now, at, ndocs, len = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local epoch, updated = tonumber(ARGV[11]), ARGV[12]
local m
if at == 0 then
  m = settle(sid, now)
  if not m[1] then
    return {'gone'}
  end
else
  m = read_meta(sid)
  if not alive(m, now) then
    return {'changed'}
  end
end
if redis.call('LLEN', sk(sid, 'msgs')) ~= len or tonumber(m[3] or '0') ~= epoch
  or (m[2] or '') ~= updated or at + ndocs > len then
  return {'changed'}
end
local e, fields, before
if at == 0 then
  -- The old epoch's words leave the counters; the new one's are added page by page.
  redis.call('HINCRBY', STATS, 'words', int(0 - tonumber(m[4] or '0')))
  e, fields = retire(sid, m)
  before = 0
else
  if redis.call('HGET', meta, 'reindexed') ~= int(at) then
    return {'changed'}
  end
  e, fields, before = epoch, {'epoch', int(epoch), 'words', '0'}, tonumber(m[4] or '0')
end
local words = index_batch(sid, e, 13, at, ndocs, at == 0, pexp(m[6]))
local total = before + words
redis.call('HINCRBY', STATS, 'words', int(words))
fields[4] = int(total)
fields[#fields + 1] = 'reindexed'
fields[#fields + 1] = int(at + ndocs)
redis.call('HSET', meta, unpack(fields))
track(sid, m, e, len, total)
return {'ok', e}
