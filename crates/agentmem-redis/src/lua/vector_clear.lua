-- Deletes every embedding vector, the hash `{root}:vec`; returns how many there were. One
-- script, so no write lands between the count and the deletion.
local key = ARGV[1] .. ':vec'
local count = redis.call('HLEN', key)
redis.call('DEL', key)
return count
