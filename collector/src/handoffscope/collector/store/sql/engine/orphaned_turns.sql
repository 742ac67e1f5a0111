-- The stored turns whose run is gone (retention deleted it): their conversations are
-- turned again (engine/turns.py, `expire`), the next run becoming the first.
SELECT t.run_id, t.run_key, t.conversation_id
FROM turns AS t
WHERE NOT EXISTS (SELECT 1 FROM runs AS r WHERE r.run_key = t.run_key AND r.run_id = t.run_id);
