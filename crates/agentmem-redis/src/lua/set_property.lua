-- Sets store property ARGV[2] to ARGV[3] when it is ARGV[5] (ARGV[4] == '1') or is not set
-- (ARGV[4] == '0'), in the hash `{root}:props`. Returns 1 when set, else 0.
local key = ARGV[1] .. ':props'
local current = redis.call('HGET', key, ARGV[2])
if ARGV[4] == '1' then
  if current ~= ARGV[5] then return 0 end
elseif current then
  return 0
end
redis.call('HSET', key, ARGV[2], ARGV[3])
return 1
