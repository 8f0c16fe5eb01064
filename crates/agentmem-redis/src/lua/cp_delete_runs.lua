-- delete_run_checkpoints: ARGV = root, then the run ids. Deletes their checkpoints (through
-- `P:cp:run:R`) with their writes in every thread (other writes stay, those made ahead of a
-- checkpoint not stored too), then the blobs no checkpoint left in their namespaces reads;
-- returns how many checkpoints went.
local count = 0
local touched = {}
for i = 2, #ARGV do
  for _, m in ipairs(redis.call('ZRANGE', runkey(ARGV[i]), 0, -1)) do
    local id, thread, ns = split3(m)
    drop(thread, ns, id, false)
    count = count + 1
    touched[thread .. Z .. ns] = {thread, ns}
  end
end
for _, tn in pairs(touched) do
  gc_blobs(tn[1], tn[2])
  settle_thread(tn[1])
end
return count
