-- The steps of a client-driven migration of its own (after migrate_head.lua): ARGV[5] =
--   'start': forgets the progress of any other migration; returns {'ok', progress fields and
--            values...};
--   'set', field, value: records progress;
--   'done': the migration is complete: bumps the version, forgets the progress and
--            releases the lock;
--   'release': releases the lock (the migrator failed; the progress stays for the next).
local op = ARGV[5]
if op == 'start' then
  if redis.call('HGET', MIGRATION_PROGRESS, 'v') ~= ARGV[3] then
    redis.call('DEL', MIGRATION_PROGRESS)
    redis.call('HSET', MIGRATION_PROGRESS, 'v', ARGV[3])
  end
  local out = {'ok'}
  for _, v in ipairs(redis.call('HGETALL', MIGRATION_PROGRESS)) do
    out[#out + 1] = v
  end
  return out
elseif op == 'set' then
  redis.call('HSET', MIGRATION_PROGRESS, ARGV[6], ARGV[7])
elseif op == 'done' then
  redis.call('SET', KEYS[1], tonumber(ARGV[3]) + 1)
  redis.call('DEL', MIGRATION_PROGRESS, MIGRATION_LOCK)
else
  redis.call('DEL', MIGRATION_LOCK)
end
return {'ok'}
