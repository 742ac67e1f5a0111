-- Before a step re-tells the turns of the conversations it touched (engine/turns.py):
-- several collectors' judges may write runs of one conversation at once (its runs fall
-- in different partitions). Each conversation is locked until the transaction ends, so
-- the judge that comes second reads the turns the first one committed; in one order
-- (sorted, OFFSET 0 keeps the sort below the locking) so two judges never wait on each
-- other. hs_turn_conversations: the conversations the step's runs are or were in.
SELECT pg_advisory_xact_lock(k) FROM (
    SELECT DISTINCT hashtextextended('handoffscope.conversation:' || conversation_id, 0) AS k
    FROM hs_turn_conversations
    ORDER BY k
    OFFSET 0
) AS s;
