-- put_checkpoint: ARGV = root, thread, ns, id, creation time (µs), run flag ('1' when the
-- metadata's `run_id` is a string), run id, n, then n field/value pairs of the checkpoint's
-- hash, then field/value pairs of the blobs (`channel NUL version` -> value). Replaces a
-- checkpoint at the same key (its writes, a hash of their own, stay), and stores the blobs,
-- all in one step. Returns 1.
local thread, ns, id = ARGV[2], ARGV[3], ARGV[4]
local n = tonumber(ARGV[8])
local c, member = unrun(thread, ns, id)
redis.call('UNLINK', c)
local fields = {}
for i = 9, 8 + 2 * n do
  fields[#fields + 1] = ARGV[i]
end
chunked('HSET', c, fields)
local blobs = {}
for i = 9 + 2 * n, #ARGV do
  blobs[#blobs + 1] = ARGV[i]
end
chunked('HSET', nkey(thread, ns, 'blobs'), blobs)
redis.call('ZADD', nkey(thread, ns, 'ids'), 0, id)
redis.call('ZADD', tkey(thread, 'ids'), 0, id .. Z .. ns)
redis.call('ZADD', tkey(thread, 'times'), ARGV[5], ns .. Z .. id)
redis.call('ZADD', ALL, 0, member)
redis.call('ZADD', THREADS, 0, thread)
if ARGV[6] == '1' then
  redis.call('ZADD', runkey(ARGV[7]), 0, member)
end
return 1
