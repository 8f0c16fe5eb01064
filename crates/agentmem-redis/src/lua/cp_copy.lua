-- copy_thread: ARGV = root, source, target. Copies every checkpoint of the source (all
-- namespaces: hashes, their writes, blobs, index entries and creation times) to the target in
-- one step; writes made ahead of a checkpoint not stored are not copied, and the target's own
-- such writes go (the target becomes the source's copy, as the reference store makes it).
-- Returns how many; -1 when the source holds no checkpoint, -2 when the target holds one
-- (nothing written then).
local src, dst = ARGV[2], ARGV[3]
local members = redis.call('ZRANGE', tkey(src, 'ids'), 0, -1)
if #members == 0 then
  return -1
end
if redis.call('EXISTS', tkey(dst, 'ids')) == 1 then
  return -2
end
drop_all_writes(dst)
local src_times = tkey(src, 'times')
local dst_writes = tkey(dst, 'writes')
local spaces = {}
for _, m in ipairs(members) do
  local id, ns = split2(m)
  local fields = redis.call('HGETALL', ckey(src, ns, id))
  chunked('HSET', ckey(dst, ns, id), fields)
  local writes = redis.call('HGETALL', wkey(src, ns, id))
  if #writes > 0 then
    chunked('HSET', wkey(dst, ns, id), writes)
    redis.call('ZADD', dst_writes, 0, ns .. Z .. id)
  end
  local member = id .. Z .. dst .. Z .. ns
  redis.call('ZADD', nkey(dst, ns, 'ids'), 0, id)
  redis.call('ZADD', tkey(dst, 'ids'), 0, m)
  local score = redis.call('ZSCORE', src_times, ns .. Z .. id) or '0'
  redis.call('ZADD', tkey(dst, 'times'), score, ns .. Z .. id)
  redis.call('ZADD', ALL, 0, member)
  for k = 1, #fields, 2 do
    if fields[k] == 'run' then
      redis.call('ZADD', runkey(fields[k + 1]), 0, member)
    end
  end
  spaces[ns] = true
end
for ns in pairs(spaces) do
  chunked('HSET', nkey(dst, ns, 'blobs'), redis.call('HGETALL', nkey(src, ns, 'blobs')))
end
redis.call('ZADD', THREADS, 0, dst)
return #members
