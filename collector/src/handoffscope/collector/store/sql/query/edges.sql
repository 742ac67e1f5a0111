-- GET /api/v1/edges: agent -> agent edges of handoffs first seen in [$since, $until),
-- busiest first, with the unhealthy count (verdicts in $failures judged at $now), the
-- handoffs on an undeclared route, and the verdict histogram.
-- Over long windows the handoffs table holds millions of rows, so the whole hours come
-- from rollups: edge_daily for the whole days inside the window ($d0..$d1, i.e. hours
-- $dh0..$dh1), edge_hourly for the other whole hours ($h0..$h1). They count each handoff
-- under the verdict its timeline ends in (engine step 21); the few whose last flip is
-- still ahead of $now are corrected to their verdict at $now (ahead, corrections). Read
-- live from `handoffs`: the partial hours at the window's ends (before $full_lo, from
-- $full_hi). The parts never overlap, so counts are exact. '' in the rollups stands for
-- an unknown agent (NULL in handoffs).
-- Delegations (an agent called as a tool, kind = 'delegation') are not in the rollups: they
-- are read live and returned as edges of their own kind, so a view can draw them apart.
WITH settled AS (
    SELECT 'handoff' AS kind, from_agent, to_agent, verdict, undeclared, handoffs,
           input_tokens, output_tokens, model_calls, cost_nusd, unpriced
    FROM edge_daily
    WHERE day BETWEEN $d0 AND $d1
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    UNION ALL
    SELECT 'handoff' AS kind, from_agent, to_agent, verdict, undeclared, handoffs,
           input_tokens, output_tokens, model_calls, cost_nusd, unpriced
    FROM edge_hourly
    WHERE hour BETWEEN $h0 AND $h1
      AND hour NOT BETWEEN $dh0 AND $dh1
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
),
settled_sum AS (
    SELECT
        kind,
        nullif(from_agent, '') AS from_agent,
        nullif(to_agent, '') AS to_agent,
        verdict,
        sum(handoffs) AS n,
        coalesce(sum(handoffs) FILTER (WHERE undeclared), 0) AS u,
        sum(input_tokens) AS input_tokens,
        sum(output_tokens) AS output_tokens,
        sum(model_calls) AS model_calls,
        sum(cost_nusd) AS cost_nusd,
        sum(unpriced) AS unpriced
    FROM settled
    GROUP BY ALL
),
live AS (
    -- Read live: delegations over the whole window, and every other handoff of the
    -- partial hours at the window's ends, judged at $now.
    SELECT
        coalesce(kind, 'handoff') AS kind,
        from_agent,
        to_agent,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict,
        count(*) AS n,
        count(*) FILTER (WHERE route_declared = false) AS u,
        coalesce(sum(input_tokens), 0) AS input_tokens,
        coalesce(sum(output_tokens), 0) AS output_tokens,
        coalesce(sum(model_calls), 0) AS model_calls,
        coalesce(sum(round(cost_usd * 1e9)), 0) AS cost_nusd,
        count(*) FILTER (WHERE (input_tokens IS NOT NULL OR output_tokens IS NOT NULL
                                OR model_calls IS NOT NULL) AND cost_usd IS NULL) AS unpriced
    FROM (
        -- Two reads, so that row-group min/max on first_seen_ns prunes the second: one OR
        -- over both would read every row group of the window.
        SELECT * FROM handoffs
        WHERE first_seen_ns >= $since
          AND first_seen_ns < $until
          AND kind = 'delegation'
        UNION ALL
        SELECT * FROM handoffs
        WHERE (
              (first_seen_ns >= $since AND first_seen_ns < $full_lo)
              OR (first_seen_ns >= $full_hi AND first_seen_ns < $until)
          )
          AND kind IS DISTINCT FROM 'delegation'
    )
    WHERE ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    GROUP BY ALL
),
ahead AS (
    -- The rollups count a handoff under the verdict its timeline ends in; for the few
    -- whose last flip is still ahead of $now, that one is taken back and the verdict at
    -- $now counted instead.
    SELECT
        from_agent,
        to_agent,
        CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict ELSE flip1_verdict END AS final,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS at_now,
        coalesce(route_declared = false, false) AS undeclared,
        coalesce(input_tokens, 0) AS input_tokens,
        coalesce(output_tokens, 0) AS output_tokens,
        coalesce(model_calls, 0) AS model_calls,
        coalesce(round(cost_usd * 1e9), 0) AS cost_nusd,
        CASE WHEN (input_tokens IS NOT NULL OR output_tokens IS NOT NULL OR model_calls IS NOT NULL)
             AND cost_usd IS NULL THEN 1 ELSE 0 END AS unpriced
    FROM handoffs
    WHERE coalesce(flip2_ns, flip1_ns) > $now
      -- Implied by the line above (it compares one of the two), and it is what row-group
      -- min/max can read: it skips the row groups whose flips are all past, nearly all of
      -- them (the coalesce alone read every row of the window: 110 ms at 10M handoffs).
      AND (flip2_ns > $now OR flip1_ns > $now)
      AND kind IS DISTINCT FROM 'delegation'
      AND first_seen_ns >= $full_lo
      AND first_seen_ns < $full_hi
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
),
corrections AS (
    SELECT 'handoff' AS kind, from_agent, to_agent, verdict, sum(d) AS n,
           coalesce(sum(d) FILTER (WHERE undeclared), 0) AS u,
           sum(d * input_tokens) AS input_tokens, sum(d * output_tokens) AS output_tokens,
           sum(d * model_calls) AS model_calls, sum(d * cost_nusd) AS cost_nusd,
           sum(d * unpriced) AS unpriced
    FROM (
        SELECT from_agent, to_agent, final AS verdict, -1 AS d, undeclared,
               input_tokens, output_tokens, model_calls, cost_nusd, unpriced FROM ahead
        UNION ALL
        SELECT from_agent, to_agent, at_now, 1, undeclared,
               input_tokens, output_tokens, model_calls, cost_nusd, unpriced FROM ahead
    )
    GROUP BY ALL
),
per_verdict AS (
    SELECT kind, from_agent, to_agent, verdict, sum(n) AS n, sum(u) AS u,
           sum(input_tokens) AS input_tokens,
           sum(output_tokens) AS output_tokens,
           sum(model_calls) AS model_calls,
           sum(cost_nusd) AS cost_nusd,
           sum(unpriced) AS unpriced
    FROM (
        SELECT * FROM settled_sum
        UNION ALL SELECT * FROM live
        UNION ALL SELECT * FROM corrections
    )
    GROUP BY ALL
    HAVING sum(n) <> 0
)
SELECT
    kind,
    from_agent,
    to_agent,
    sum(n)::BIGINT AS count,
    coalesce(sum(n) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy,
    sum(u)::BIGINT AS undeclared,
    sum(input_tokens)::BIGINT AS input_tokens,
    coalesce(sum(input_tokens) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy_input_tokens,
    sum(output_tokens)::BIGINT AS output_tokens,
    coalesce(sum(output_tokens) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy_output_tokens,
    sum(model_calls)::BIGINT AS model_calls,
    coalesce(sum(model_calls) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy_model_calls,
    sum(cost_nusd)::BIGINT AS cost_nusd,
    coalesce(sum(cost_nusd) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy_cost_nusd,
    sum(unpriced)::BIGINT AS unpriced,
    coalesce(sum(unpriced) FILTER (WHERE list_contains($failures, verdict)), 0)::BIGINT AS unhealthy_unpriced,
    map(list(verdict ORDER BY verdict), list(n::BIGINT ORDER BY verdict)) AS verdicts
FROM per_verdict
GROUP BY ALL
ORDER BY count DESC, kind, from_agent NULLS LAST, to_agent NULLS LAST;
