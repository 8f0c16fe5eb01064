-- Shared head of the checkpoint scripts (src/checkpoints.rs; the layout is in the README).
-- ARGV[1] is the store's key root: its prefix, or on a Redis Cluster `{prefix}`, a hash tag,
-- so every key built here lies in the slot of KEYS[1] (the schema key).
--
-- Thread ids, namespaces, checkpoint ids and run ids are free text (`: / | $ * ? [ ] { }`,
-- spaces, any UTF-8), so they enter key names only through `esc` (lua/shared.lua), which keeps
-- `A-Z a-z 0-9 _ . -` and writes every other byte as `%XX` (uppercase hex): two distinct ids
-- never give one name, and no name part holds `:`, a brace (which would end the hash tag) or
-- a glob character. The ids themselves are kept as they are in the index members (sorted
-- sets), so listings return them exactly. NUL, which none of them holds (thread ids,
-- namespaces, channel names, versions, task ids and paths are refused with one; checkpoint
-- ids hold no control character), separates the parts of a member or a field.
local P = ARGV[1]
-- Sorted set, every score 0: every thread holding a checkpoint (ZRANGE: byte order).
local THREADS = P .. ':cp:threads'
-- Sorted set, every score 0: `id NUL thread NUL ns` of every checkpoint (ZREVRANGEBYLEX:
-- greatest id first).
local ALL = P .. ':cp:all'

-- Keys of one thread: `ids` (sorted set, score 0: `id NUL ns`), `times` (sorted set:
-- `ns NUL id` -> creation time in microseconds), `writes` (sorted set, score 0: `ns NUL id`
-- of every write hash of the thread, the checkpoint stored or not: writes may come first, and
-- deleting or pruning the thread must find them all without a scan).
local function tkey(thread, part)
  return P .. ':cp:t:' .. esc(thread) .. ':' .. part
end

-- Keys of one namespace of a thread: `ids` (sorted set, score 0: checkpoint ids), `blobs`
-- (hash: `channel NUL version` -> value).
local function nkey(thread, ns, part)
  return P .. ':cp:t:' .. esc(thread) .. ':n:' .. esc(ns) .. ':' .. part
end

-- Hash: one checkpoint (`type`, `body`, `parent`, `cv`, `meta`, `created`, `run`, `m:KEY`).
local function ckey(thread, ns, id)
  return nkey(thread, ns, 'c:' .. esc(id))
end

-- Hash: the pending writes made after one checkpoint (`task NUL idx` -> the write), kept
-- whether or not the checkpoint is stored; listed in the thread's `writes`.
local function wkey(thread, ns, id)
  return nkey(thread, ns, 'w:' .. esc(id))
end

-- Sorted set, every score 0: `id NUL thread NUL ns` of the checkpoints of one run.
local function runkey(run)
  return P .. ':cp:run:' .. esc(run)
end

-- The blob fields (`channel NUL version`) a checkpoint's `cv` names: `cv` is its channel
-- versions as `channel NUL version NUL channel NUL version ...` (empty when none).
local function cv_fields(cv)
  local out = {}
  if not cv or #cv == 0 then
    return out
  end
  local parts, i = {}, 1
  while true do
    local j = string.find(cv, Z, i, true)
    if not j then
      parts[#parts + 1] = string.sub(cv, i)
      break
    end
    parts[#parts + 1] = string.sub(cv, i, j - 1)
    i = j + 1
  end
  for k = 1, #parts - 1, 2 do
    out[#out + 1] = parts[k] .. Z .. parts[k + 1]
  end
  return out
end

-- One checkpoint as the client reads it: {thread, ns, id, type, body, parent, cv, meta,
-- created, the values of the blobs `cv` names (false when not stored), its writes as
-- HGETALL returns them}; nil when it is not stored.
local function row(thread, ns, id)
  local f = redis.call('HMGET', ckey(thread, ns, id), 'type', 'body', 'parent', 'cv', 'meta',
    'created')
  if not f[1] then
    return nil
  end
  local blobs = chunked('HMGET', nkey(thread, ns, 'blobs'), cv_fields(f[4]), true)
  local writes = redis.call('HGETALL', wkey(thread, ns, id))
  return {thread, ns, id, f[1], f[2], f[3], f[4] or '', f[5] or '{}', f[6] or '', blobs, writes}
end

-- Deletes the writes made after checkpoint `id` (stored or not) and their entry in the
-- thread's `writes`.
local function drop_writes(thread, ns, id)
  redis.call('UNLINK', wkey(thread, ns, id))
  redis.call('ZREM', tkey(thread, 'writes'), ns .. Z .. id)
end

-- Deletes every write hash of a thread and its `writes` index.
local function drop_all_writes(thread)
  local index = tkey(thread, 'writes')
  for _, m in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    local ns, id = split2(m)
    redis.call('UNLINK', wkey(thread, ns, id))
  end
  redis.call('UNLINK', index)
end

-- Takes checkpoint `id` off its run's index (when it has a run); returns its hash's key and
-- its member in ALL and the run indexes.
local function unrun(thread, ns, id)
  local c = ckey(thread, ns, id)
  local member = id .. Z .. thread .. Z .. ns
  local run = redis.call('HGET', c, 'run')
  if run then
    redis.call('ZREM', runkey(run), member)
  end
  return c, member
end

-- Deletes one checkpoint and its writes, and takes it off the store-wide indexes (ALL, its
-- run's); unless `whole` (the whole thread goes, its own keys with it), off the thread's and
-- the namespace's too. Blobs stay (see `gc_blobs`).
local function drop(thread, ns, id, whole)
  local c, member = unrun(thread, ns, id)
  redis.call('ZREM', ALL, member)
  redis.call('UNLINK', c)
  if not whole then
    drop_writes(thread, ns, id)
    redis.call('ZREM', nkey(thread, ns, 'ids'), id)
    redis.call('ZREM', tkey(thread, 'ids'), id .. Z .. ns)
    redis.call('ZREM', tkey(thread, 'times'), ns .. Z .. id)
  end
end

-- Deletes the blobs of a namespace that none of its checkpoints reads (all of them when it
-- holds none).
local function gc_blobs(thread, ns)
  local blobs = nkey(thread, ns, 'blobs')
  local ids = redis.call('ZRANGE', nkey(thread, ns, 'ids'), 0, -1)
  if #ids == 0 then
    redis.call('UNLINK', blobs)
    return
  end
  local read = {}
  for _, id in ipairs(ids) do
    for _, f in ipairs(cv_fields(redis.call('HGET', ckey(thread, ns, id), 'cv'))) do
      read[f] = true
    end
  end
  local stale = {}
  for _, f in ipairs(redis.call('HKEYS', blobs)) do
    if not read[f] then
      stale[#stale + 1] = f
    end
  end
  chunked('HDEL', blobs, stale)
end

-- Takes a thread off THREADS once it holds no checkpoint.
local function settle_thread(thread)
  if redis.call('EXISTS', tkey(thread, 'ids')) == 0 then
    redis.call('ZREM', THREADS, thread)
  end
end

-- Deletes a thread, every namespace of it, and every write made in it (those ahead of a
-- checkpoint not stored too); returns how many checkpoints it held.
local function delete_thread(thread)
  local members = redis.call('ZRANGE', tkey(thread, 'ids'), 0, -1)
  local spaces = {}
  for _, m in ipairs(members) do
    local id, ns = split2(m)
    drop(thread, ns, id, true)
    spaces[ns] = true
  end
  for ns in pairs(spaces) do
    redis.call('UNLINK', nkey(thread, ns, 'ids'), nkey(thread, ns, 'blobs'))
  end
  drop_all_writes(thread)
  redis.call('UNLINK', tkey(thread, 'ids'), tkey(thread, 'times'))
  redis.call('ZREM', THREADS, thread)
  return #members
end
