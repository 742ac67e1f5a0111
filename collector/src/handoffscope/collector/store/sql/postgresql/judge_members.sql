-- How many collectors of this database judge now: the sessions holding join_judges.sql's
-- lock (a single-key advisory lock shows its key's high and low 32 bits as classid and
-- objid, objsubid 1). A collector that died is gone from here once PostgreSQL ends its
-- session.
SELECT count(*)
FROM pg_locks
WHERE locktype = 'advisory'
  AND granted
  AND objsubid = 1
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND classid::bigint = (hashtext($name)::bigint >> 32) & 4294967295
  AND objid::bigint = hashtext($name)::bigint & 4294967295;
