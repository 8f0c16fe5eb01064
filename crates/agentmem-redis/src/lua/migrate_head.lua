-- Head of every script of a client-driven migration (schema.rs), after the shared heads its
-- body needs. ARGV[1] = key root, ARGV[2] = the token of the migration lock `P:migrating`,
-- ARGV[3] = the version migrated from, ARGV[4] = the lock's time to live (ms); the body's
-- own arguments follow. A script does nothing but answer {'lost'} unless the data is still
-- at that version and the caller still holds the lock, which it then renews: a migrator that
-- stalled past the time to live, and was replaced, changes nothing more. Replies are lists
-- whose first element is a status.
local MIGRATION_LOCK = ARGV[1] .. ':migrating'
-- Hash: the progress of the migration under way (`v`: the version it migrates from; the
-- rest is the migration's own), so that one cut short resumes where it stopped.
local MIGRATION_PROGRESS = ARGV[1] .. ':migration'
if redis.call('GET', KEYS[1]) ~= ARGV[3] or redis.call('GET', MIGRATION_LOCK) ~= ARGV[2] then
  return {'lost'}
end
redis.call('PEXPIRE', MIGRATION_LOCK, ARGV[4])
