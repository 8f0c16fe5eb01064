-- delete_thread: ARGV = root, thread. Deletes every namespace of it (checkpoints, blobs,
-- index entries) and every write made in it, with or without a stored checkpoint; returns
-- how many checkpoints it held.
return delete_thread(ARGV[2])
