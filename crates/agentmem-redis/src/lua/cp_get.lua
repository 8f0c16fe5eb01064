-- get_checkpoint: ARGV = root, thread, ns, id flag ('1' when an id is given), id. Returns the
-- checkpoint's row (see `row`), the newest (greatest id) of the namespace without an id; nil
-- when there is none.
local thread, ns, id = ARGV[2], ARGV[3], ARGV[5]
if ARGV[4] ~= '1' then
  local top = redis.call('ZREVRANGEBYLEX', nkey(thread, ns, 'ids'), '+', '-', 'LIMIT', 0, 1)
  if #top == 0 then
    return false
  end
  id = top[1]
end
return row(thread, ns, id) or false
