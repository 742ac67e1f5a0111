-- How many evidence spans one run has stored (the total behind a page of run_spans.sql),
-- and the trace and conversation ids they carry: over all of the run's spans, not one
-- page, so the on-call engineer's trace id is listed whichever page is read (at most 100
-- of each, sorted).
-- PostgreSQL: array_agg(...)[1:100] for list_slice(array_sort(list())).
SELECT count(*) AS n,
       (array_agg(DISTINCT trace_id ORDER BY trace_id))[1:100] AS trace_ids,
       (array_agg(DISTINCT gen_ai_conversation_id ORDER BY gen_ai_conversation_id)
           FILTER (WHERE gen_ai_conversation_id IS NOT NULL))[1:100] AS conversation_ids
FROM spans
WHERE received_ns BETWEEN $lo AND $hi
  AND handoff_run_id = $run_id;
