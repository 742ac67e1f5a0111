-- The runs of conversations in order, each with the run before it and its continuity
-- (docs/semconv.md, "Turns"): GET /api/v1/conversations/{id}. The weekly review counts
-- the same from the judge's rollups (continuity_weekly.sql), a run's detail reads its
-- turn from the judge's `turns` (run_turn.sql); this tells them from the runs
-- themselves, which the tests hold those two to.
--   $conversation  one conversation (NULL: any)
--   $since/$until  runs first seen in [since, until) are returned — and found: a
--                  conversation is read whole, so each run's previous run is there
--                  whatever its age
--   $now           the instant verdicts are judged at
-- Entry agents, per service: those any of its runs declared (run.entry_agents), and
-- those that started a conversation's first run (learned): turn_entries counts both.
WITH scope AS (
    SELECT DISTINCT conversation_id
    FROM runs
    WHERE conversation_id IS NOT NULL
      AND ($conversation::VARCHAR IS NULL OR conversation_id = $conversation)
      AND first_seen_ns >= $since AND first_seen_ns < $until
),
ordered AS (
    SELECT
        r.run_id, r.service, r.conversation_id, r.start_agent, r.final_agent,
        r.current_agent, r.first_to_agent, r.first_seen_ns, r.started_ns, r.ended_ns,
        r.status, r.handoff_count, r.loop, r.cost_usd,
        hs_verdict_at(r.verdict, r.flip1_ns, r.flip1_verdict, r.flip2_ns, r.flip2_verdict, $now)
            AS verdict,
        lag(r.run_id) OVER w AS previous_run_id,
        lag(coalesce(r.final_agent, r.current_agent)) OVER w AS previous_final_agent,
        lag(r.service) OVER w AS previous_service,
        row_number() OVER w AS position
    FROM runs AS r
    JOIN scope AS s ON s.conversation_id = r.conversation_id
    WINDOW w AS (
        PARTITION BY r.conversation_id
        ORDER BY coalesce(r.started_ns, r.first_seen_ns), r.run_id
    )
),
entry AS (
    -- Kept by the judge beside the runs (engine step 25, engine/turns.py: '' for no
    -- service): reading every run of the service for them took 150 ms at 3M runs.
    SELECT service, agent FROM turn_entries WHERE declared > 0 OR firsts > 0
)
SELECT
    t.*,
    hs_continuity(
        t.previous_run_id IS NOT NULL,
        t.previous_final_agent,
        t.start_agent,
        t.first_to_agent,
        EXISTS (
            SELECT 1 FROM entry AS e
            WHERE e.service = coalesce(t.service, '') AND e.agent = t.start_agent
        )
    ) AS continuity
FROM ordered AS t
WHERE t.first_seen_ns >= $since AND t.first_seen_ns < $until
ORDER BY t.conversation_id, t.position;
