-- The trace ids and conversation (thread) ids the evidence of these runs carried, so the
-- runs list can show them (GET /api/v1/runs?ids=true). $lo is the earliest arrival of
-- the listed runs: only the row groups received since then are read.
-- PostgreSQL: array_agg for list(), = ANY for the id list.
SELECT
    handoff_run_id AS run_id,
    array_agg(DISTINCT trace_id ORDER BY trace_id) AS trace_ids,
    array_agg(DISTINCT gen_ai_conversation_id ORDER BY gen_ai_conversation_id)
        FILTER (WHERE gen_ai_conversation_id IS NOT NULL) AS conversation_ids
FROM spans
WHERE received_ns >= $lo
  AND handoff_run_id = ANY($run_ids::text[])
GROUP BY 1;
