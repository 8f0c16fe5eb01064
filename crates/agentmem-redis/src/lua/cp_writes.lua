-- put_writes: ARGV = root, thread, ns, id, then (field, value, mode) per write: field
-- `task NUL idx`, mode 'r' (a special write, index < 0: replaces) or 'n' (stored only when
-- absent). Stored whether or not the checkpoint is (LangGraph may write them before its put),
-- the write hash listed in the thread's `writes` so deletes and prunes find it. All in one
-- step; returns 1.
local thread, ns, id = ARGV[2], ARGV[3], ARGV[4]
if #ARGV < 7 then
  return 1
end
local w = wkey(thread, ns, id)
for i = 5, #ARGV - 2, 3 do
  if ARGV[i + 2] == 'r' then
    redis.call('HSET', w, ARGV[i], ARGV[i + 1])
  else
    redis.call('HSETNX', w, ARGV[i], ARGV[i + 1])
  end
end
redis.call('ZADD', tkey(thread, 'writes'), 0, ns .. Z .. id)
return 1
