-- A handoff history written set-based into a DuckDB file whose schema the collector's
-- own store and health engine created (gen_history.py, the default path): the derived
-- tables AND the evidence spans behind them, in under a minute per million handoffs
-- rather than the half hour per ten million of pushing every span through store + engine.
--
-- Sections (a line `-- @section NAME`), each of statements separated by lines holding
-- only ';', run by gen_history.py in this order:
--   setup   once: macros.
--   chunk   once per chunk of handoff row numbers [$lo, $hi) (multiples of 33: whole
--           runs), oldest first: the chunk's handoffs, runs, waits, then its spans,
--           stamped with group commit $commit_seq. Chunks bound the memory a step needs
--           (the 10M history in one statement ran out of a 1 GB limit) and keep every
--           table in time order.
--   day     once per UTC day [$lo, $hi) of first-seen time, oldest first: the rollups,
--           from that day's handoff rows (a day holds whole hours and whole days).
--   finish  once: services.
-- Parameters: $handoffs, $now_ns, $span_ns (the history's length), $grace_ns (the
-- collector's grace), and the section's own.
--
-- A port of gen_history_pg.sql (same services and agents, runs of 1-6 handoffs in the
-- same size cycle, the same verdict mix), closer to the engine: a run's status and
-- verifier are known to its handoffs (run_status, run_stopped, the last handoff's claim
-- judged as a false completion), an unadmitted destination of a run that ended is
-- judged at once, and in-flight runs flip with their handoffs. A collector starting on
-- the file reloads the last hour's runs and re-judges them from these spans: of ~1,300
-- handoff rows it rewrote 3 (a wait's overdue flip behind an earlier verdict), of ~390
-- runs ~20 (the path and loop around a destination never admitted, which the SQL still
-- counts). "Random" is DuckDB's hash() of the row number: the same history on one
-- DuckDB version (hash() may change between versions; nothing persisted depends on it).
-- Unlike the PostgreSQL history this one has spans, made from the derived rows so they
-- agree with them: per handoff its request span, an accept span unless it was never
-- admitted, and a wait span (plus a decision span if decided) for waits; per run its run
-- span and, if verified, an outcome span — about 2.6 spans a handoff, as gen_history.py
-- --through-engine sends. One trace per run. Every table is inserted in time order
-- (first-seen for the derived rows, received for spans): DuckDB skips row groups by
-- min/max, and the collector's queries rely on that clustering.

-- @section setup
CREATE TEMP MACRO gen_rand(x) AS hash(x) % 1000
;
-- records.run_key: the signed little-endian int64 of md5 bytes 8..15.
CREATE TEMP MACRO gen_run_key(id) AS (
    ((md5_number(id) >> 64)::HUGEINT
     - CASE WHEN (md5_number(id) >> 64) >= 9223372036854775808 THEN 18446744073709551616 ELSE 0 END
    )::BIGINT
)
;
CREATE TEMP MACRO gen_run_id(rn) AS 'run-' || lpad(rn::VARCHAR, 9, '0')
;
-- @section chunk
CREATE TEMP TABLE gen_h AS
WITH sizes(r, k) AS (
    VALUES (0, 1), (1, 2), (2, 2), (3, 3), (4, 3), (5, 3), (6, 4), (7, 4), (8, 5), (9, 6)
),
shape AS (  -- 10 runs, 33 handoffs: offset in the block -> (run in block, seq)
    SELECT (row_number() OVER (ORDER BY r, seq) - 1)::BIGINT AS o, r, seq, k
    FROM sizes, range(1, k + 1) AS t(seq)
),
base AS (
    SELECT
        i,
        (i // 33) * 10 + shape.r AS rn,
        shape.seq::INTEGER AS seq,
        -- The run's last handoff (the history's last run may be cut short).
        shape.seq = shape.k OR i = $handoffs - 1 AS is_last,
        gen_rand(i) AS f,
        gen_rand(i + 4000000000000) AS g,
        ceil($handoffs / 33.0)::BIGINT * 10 AS runs_total
    FROM range($lo::BIGINT, least($hi, $handoffs)::BIGINT) AS t(i)
    JOIN shape ON shape.o = i % 33
),
run_facts AS (
    SELECT
        *,
        least(
            $now_ns - $span_ns + rn * ($span_ns // runs_total),
            $now_ns - 60000000000
        ) AS t0,
        gen_rand(-rn - 1) AS rf,
        gen_rand(rn + 5000000000000) AS rf2,
        gen_rand(rn + 6000000000000) AS rf3,
        rn % 3 AS svc
    FROM base
),
placed AS (
    SELECT
        *,
        t0 > $now_ns - 900000000000 AS recent,
        rf < 20 AS loop_run,
        CASE
            WHEN t0 > $now_ns - 900000000000 AND rf < 500 THEN 'started'
            WHEN rf2 < 40 THEN 'failed'
            WHEN rf2 < 60 OR rf < 20 THEN 'max_turns'
            ELSE 'completed'
        END AS status,
        (['billing-app', 'support-desk', 'travel-planner'])[svc + 1] AS service,
        CASE svc
            WHEN 0 THEN ['triage', 'billing', 'refunds', 'fraud', 'escalation', 'ledger']
            WHEN 1 THEN ['frontdesk', 'tech', 'accounts', 'returns', 'supervisor']
            ELSE ['planner', 'flights', 'hotels', 'payments', 'concierge', 'visa', 'cars']
        END AS agents,
        t0 + seq::BIGINT * 2000000000 AS req_ns
    FROM run_facts
),
moved AS (
    -- Agent at path position p: steps of 17 never land on the same agent twice in a row
    -- (17 mod 5, 6 and 7 is not 0); a loop run cycles through three of them.
    SELECT
        *,
        agents[1 + (rn * 31 + (CASE WHEN loop_run THEN (seq - 1) % 3 ELSE seq - 1 END) * 17)
                   % len(agents)] AS from_agent,
        agents[1 + (rn * 31 + (CASE WHEN loop_run THEN seq % 3 ELSE seq END) * 17)
                   % len(agents)] AS to_agent,
        recent AND f < 50 AS never_admitted,
        f >= 60 AND f < 80 AS wait_seen,
        gen_rand(i + 8000000000000) < 800 AND NOT recent AS decided,
        -- A completed run's last handoff claims the run done; its verifier's result
        -- (none for a tenth of them) judges the claim.
        is_last AND status = 'completed' AS claims_done,
        CASE WHEN status = 'completed' AND rf3 < 900 THEN
            CASE WHEN rf3 < 837 THEN 'pass' ELSE 'fail' END
        END AS run_outcome
    FROM placed
),
timed AS (
    SELECT
        *,
        req_ns + (50 + (i * 7) % 850) * 1000000 AS acc_ns
    FROM moved
)
SELECT
    * EXCLUDE (agents, svc, runs_total),
    acc_ns + 1000000000 AS wait_ns,  -- the wait span (checkpointed)
    acc_ns + 1000000000 + (60 + i % 1741) * 1000000000 AS decision_ns,
    CASE WHEN wait_seen THEN acc_ns + 1000000000
        + ([600, 3600, 86400])[1 + i % 3]::BIGINT * 1000000000 END AS deadline_ns,
    CASE
        WHEN never_admitted THEN req_ns + 2000000
        WHEN wait_seen AND decided THEN acc_ns + 1000000000 + (60 + i % 1741) * 1000000000 + 1000000
        WHEN wait_seen THEN acc_ns + 1000000000 + 1000000
        ELSE acc_ns + 1000000
    END AS last_ns,
    CASE
        -- Never admitted: in flight until the grace is out, unless the run has ended.
        WHEN never_admitted AND status IN ('failed', 'max_turns') THEN 'run_failed'
        WHEN never_admitted AND status = 'completed' THEN 'destination_not_started'
        WHEN never_admitted THEN 'in_flight'
        WHEN g < 30 THEN 'route_rejected'
        WHEN f < 10 THEN 'stale_control'
        WHEN f < 20 THEN 'open_tool_protocol'
        WHEN f < 30 THEN 'context_incomplete'
        WHEN f < 60 THEN 'contract_rejected'
        WHEN loop_run AND seq >= 3 THEN 'loop'
        WHEN claims_done AND run_outcome IS DISTINCT FROM 'pass' THEN 'false_complete'
        WHEN wait_seen AND NOT decided AND (f < 65 OR f >= 75) THEN 'wait_uncertain'
        WHEN wait_seen AND NOT decided THEN 'waiting_on_approval'
        ELSE 'healthy'
    END AS verdict
FROM timed
;
INSERT INTO handoffs BY NAME
SELECT
    i + 1 AS row_seq,
    gen_run_id(rn) AS run_id,
    gen_run_key(gen_run_id(rn)) AS run_key,
    'h' || seq AS handoff_id,
    service,
    seq,
    from_agent,
    to_agent,
    seq AS turn,
    req_ns AS first_seen_ns,
    last_ns AS last_seen_ns,
    lpad(to_hex(rn), 12, '0') AS fingerprint,
    CASE WHEN loop_run THEN 1 ELSE seq + 1 END AS state_version,
    1 + i % 8 AS history_items_forwarded,
    8 + i % 13 AS history_items_total,
    g >= 30 AS route_declared,
    CASE WHEN never_admitted THEN NULL WHEN f < 10 THEN to_agent ELSE from_agent END
        AS control_before,
    CASE WHEN never_admitted THEN NULL ELSE to_agent END AS control_after,
    'call_' || rn || '_' || seq AS tool_call_id,
    CASE WHEN never_admitted THEN NULL ELSE NOT (f >= 10 AND f < 20) END AS tool_call_closed,
    ['customer_tier', 'order_id'] AS required_keys,  -- the engine keeps them sorted
    CASE WHEN f >= 20 AND f < 30 AND NOT never_admitted THEN ['customer_tier']
         ELSE []::VARCHAR[] END AS missing_keys,
    CASE WHEN never_admitted THEN NULL ELSE NOT (f >= 30 AND f < 60) END AS destination_started,
    CASE WHEN f >= 30 AND f < 60 AND NOT never_admitted
         THEN (['invalid', 'stale', 'unauthorized', 'no_budget', 'vague_goal'])[1 + i % 5]
    END AS rejection_reason,
    []::VARCHAR[] AS rejection_fields,
    'specialist_needed' AS reason,
    loop_run AND seq >= 3 AS loop,
    status = 'max_turns' AS run_stopped,
    claims_done,
    CASE WHEN claims_done THEN run_outcome END AS outcome_result,
    wait_seen,
    CASE WHEN wait_seen AND f >= 65 THEN 'finance-oncall' END AS wait_owner,
    CASE WHEN wait_seen THEN 'refund_over_limit' END AS wait_reason,
    deadline_ns AS wait_deadline_ns,
    CASE WHEN wait_seen THEN 'tok' || rn END AS wait_resume_token_id,
    CASE WHEN wait_seen THEN f < 75 END AS wait_state_persisted,
    CASE WHEN wait_seen AND decided THEN 'approved' END AS wait_decision,
    verdict,
    CASE verdict WHEN 'in_flight' THEN req_ns + $grace_ns + 1
                 WHEN 'waiting_on_approval' THEN deadline_ns END AS flip1_ns,
    CASE verdict WHEN 'in_flight' THEN 'destination_not_started'
                 WHEN 'waiting_on_approval' THEN 'approval_overdue' END AS flip1_verdict,
    CASE verdict WHEN 'healthy' THEN NULL
                 WHEN 'in_flight' THEN req_ns + $grace_ns + 1
                 WHEN 'waiting_on_approval' THEN deadline_ns
                 ELSE -9223372036854775808 END AS unhealthy_from_ns,
    'handoff' AS kind,
    []::VARCHAR[] AS unobserved,
    status AS run_status
FROM gen_h
ORDER BY i
;
-- The run rows: a run's verdict is the first rule any of its handoffs or its own facts
-- fail (DESIGN §4), by position in this list. Received times are those of its spans:
-- the first request span's end and the run span's end, each exported 0.2 s later.
INSERT INTO runs BY NAME
WITH per_run AS (
    SELECT
        rn, min(t0) AS t0, min(service) AS service, bool_or(loop_run) AS loop_run,
        min(status) AS status, min(run_outcome) AS outcome_result, count(*)::INTEGER AS k,
        max(last_ns) AS last_ns,
        max(req_ns) AS last_handoff_ns,
        list(from_agent ORDER BY seq)[1:1] || list(to_agent ORDER BY seq) AS path,
        arg_max(to_agent, seq) AS last_agent,
        min(req_ns + $grace_ns + 1) FILTER (WHERE verdict = 'in_flight') AS in_flight_flip_ns,
        min(deadline_ns) FILTER (WHERE verdict = 'waiting_on_approval') AS overdue_ns,
        min(list_position(['route_rejected', 'stale_control', 'open_tool_protocol',
            'context_incomplete', 'contract_rejected', 'destination_not_started', 'loop',
            'false_complete', 'approval_overdue', 'wait_uncertain', 'run_failed',
            'waiting_on_approval', 'in_flight', 'healthy'], verdict)) AS worst,
        (count(*) FILTER (WHERE wait_seen AND NOT decided))::INTEGER AS open_waits
    FROM gen_h
    GROUP BY rn
),
facts AS (
    SELECT
        *,
        gen_run_id(rn) AS run_id,
        last_ns + 2000000000 AS end_ns
    FROM per_run
),
judged AS (
    SELECT
        *,
        status = 'completed' AND outcome_result IS DISTINCT FROM 'pass' AS false_complete,
        status IN ('failed', 'max_turns') AS failed
    FROM facts
)
SELECT
    rn + 1 AS row_seq,
    run_id,
    gen_run_key(run_id) AS run_key,
    service,
    t0 AS first_seen_ns,
    end_ns AS last_seen_ns,
    t0 + 2000000000 + 2000000 + 200000000 AS min_received_ns,
    end_ns + 200000000 AS max_received_ns,
    t0 AS started_ns,
    CASE WHEN status <> 'started' THEN end_ns END AS ended_ns,
    last_handoff_ns,
    status,
    CASE WHEN status <> 'started' THEN last_agent END AS final_agent,
    k AS turns,
    last_agent AS current_agent,
    k AS handoff_count,
    path,
    loop_run AS loop,
    CASE WHEN loop_run THEN path[1:3] ELSE []::VARCHAR[] END AS loop_cycle,
    CASE WHEN loop_run THEN 1 ELSE 0 END AS loop_repeats,
    false_complete,
    failed,
    outcome_result,
    CASE WHEN outcome_result IS NOT NULL THEN 'task_check' END AS verifier,
    open_waits AS pending_approvals,
    (['route_rejected', 'stale_control', 'open_tool_protocol', 'context_incomplete',
      'contract_rejected', 'destination_not_started', 'loop', 'false_complete',
      'approval_overdue', 'wait_uncertain', 'run_failed', 'waiting_on_approval',
      'in_flight', 'healthy'])[least(
        worst,
        CASE WHEN loop_run THEN 7 END,
        CASE WHEN false_complete THEN 8 END,
        CASE WHEN failed THEN 11 END
    )] AS verdict,
    -- As its handoffs': in flight until the grace is out, waiting until the deadline.
    CASE verdict WHEN 'in_flight' THEN in_flight_flip_ns
                 WHEN 'waiting_on_approval' THEN overdue_ns END AS flip1_ns,
    CASE verdict WHEN 'in_flight' THEN 'destination_not_started'
                 WHEN 'waiting_on_approval' THEN 'approval_overdue' END AS flip1_verdict,
    0 AS delegation_count,
    false AS unverified,
    status <> 'started' AS verification_expected,
    []::VARCHAR[] AS unobserved,
    false AS handoffs_capped,
    -- Turns: every three consecutive runs of a service are one conversation (its first
    -- run's start agent is learned as an entry agent), so the conversation, run detail
    -- and weekly continuity queries read a history where every run is a turn.
    'conv-' || service || '-'
        || ((row_number() OVER (PARTITION BY service ORDER BY rn) - 1) // 3)::VARCHAR
        AS conversation_id,
    path[1] AS start_agent,
    path[2] AS first_to_agent,
    []::VARCHAR[] AS entry_agents
FROM judged
ORDER BY rn
;
INSERT INTO waits BY NAME
SELECT
    (SELECT coalesce(max(row_seq), 0) FROM waits) + row_number() OVER (ORDER BY h.row_seq)
        AS row_seq,
    h.run_id, h.run_key, h.handoff_id, h.service, h.from_agent, h.to_agent,
    h.wait_owner AS owner,
    h.wait_reason AS reason,
    h.wait_deadline_ns AS deadline_ns,
    h.wait_resume_token_id AS resume_token_id,
    h.wait_state_persisted AS state_persisted,
    g.wait_ns AS checkpointed_ns,
    CASE WHEN h.wait_owner IS NULL THEN ['owner'] ELSE []::VARCHAR[] END
        || CASE WHEN NOT h.wait_state_persisted THEN ['state_persisted'] ELSE []::VARCHAR[] END
        AS missing,
    -- The wait's own verdict (its handoff may have failed an earlier rule).
    CASE WHEN g.f < 65 OR g.f >= 75 THEN 'wait_uncertain' ELSE 'waiting_on_approval' END
        AS verdict,
    CASE WHEN g.f >= 65 AND g.f < 75 THEN g.deadline_ns END AS flip1_ns,
    CASE WHEN g.f >= 65 AND g.f < 75 THEN 'approval_overdue' END AS flip1_verdict
FROM gen_h AS g
JOIN handoffs AS h ON h.row_seq = g.i + 1
WHERE g.wait_seen AND NOT g.decided AND h.row_seq > $lo AND h.row_seq <= $hi
ORDER BY h.row_seq
;
-- The chunk's spans, made from its handoff and run rows (row_seq - 1 is the generator's
-- row number), in arrival order, stamped with group commit $commit_seq. Every span of a
-- run carries the run's trace id.
INSERT INTO spans BY NAME
WITH hs AS (
    SELECT
        *,
        row_seq - 1 AS i,
        substr(run_id, 5)::BIGINT AS rn,
        lpad(to_hex(substr(run_id, 5)::BIGINT + 1), 32, '0') AS trace_id
    FROM handoffs
    WHERE row_seq > $lo AND row_seq <= $hi
),
request AS (
    SELECT
        trace_id, lpad(to_hex(i * 8), 16, '0') AS span_id, 'handoff.request' AS name,
        service, first_seen_ns AS start_ns, first_seen_ns + 2000000 AS end_ns,
        run_id AS handoff_run_id, handoff_id, from_agent AS handoff_from_agent,
        to_agent AS handoff_to_agent, turn AS handoff_turn, fingerprint AS handoff_fingerprint,
        state_version AS handoff_state_version,
        history_items_forwarded AS handoff_history_items_forwarded,
        history_items_total AS handoff_history_items_total,
        route_declared AS handoff_route_declared, tool_call_id AS handoff_tool_call_id,
        required_keys AS handoff_context_required_keys, reason AS handoff_reason
    FROM hs
),
accept AS (
    SELECT
        trace_id, lpad(to_hex(i * 8 + 1), 16, '0') AS span_id, 'handoff.accept' AS name,
        service, first_seen_ns + (50 + (i * 7) % 850) * 1000000 AS start_ns,
        first_seen_ns + (50 + (i * 7) % 850) * 1000000 + 1000000 AS end_ns,
        run_id AS handoff_run_id, handoff_id,
        control_before AS handoff_control_before, control_after AS handoff_control_after,
        tool_call_closed AS handoff_tool_call_closed,
        destination_started AS handoff_destination_started,
        CASE WHEN len(missing_keys) > 0 THEN missing_keys END AS handoff_context_missing_keys,
        rejection_reason AS handoff_rejection_reason
    FROM hs
    WHERE control_after IS NOT NULL
),
wait AS (
    SELECT
        trace_id, lpad(to_hex(i * 8 + 2), 16, '0') AS span_id, 'handoff.wait' AS name,
        service, first_seen_ns + (50 + (i * 7) % 850) * 1000000 + 1000000000 AS start_ns,
        first_seen_ns + (50 + (i * 7) % 850) * 1000000 + 1001000000 AS end_ns,
        run_id AS handoff_run_id, handoff_id, wait_owner, wait_reason,
        wait_deadline_ns AS wait_deadline, wait_resume_token_id, wait_state_persisted
    FROM hs
    WHERE wait_seen
),
decision AS (
    SELECT
        trace_id, lpad(to_hex(i * 8 + 3), 16, '0') AS span_id, 'handoff.wait' AS name,
        service, last_seen_ns - 1000000 AS start_ns, last_seen_ns AS end_ns,
        run_id AS handoff_run_id, handoff_id, wait_decision
    FROM hs
    WHERE wait_decision IS NOT NULL
),
rs AS (
    SELECT
        *,
        row_seq - 1 AS rn,
        lpad(to_hex(row_seq), 32, '0') AS trace_id
    FROM runs
    WHERE row_seq > $lo // 33 * 10 AND row_seq <= (least($hi, $handoffs) + 32) // 33 * 10
),
outcome AS (
    SELECT
        trace_id, lpad(to_hex((1::BIGINT << 60) + rn * 2), 16, '0') AS span_id,
        'handoff.outcome' AS name, service,
        last_seen_ns - 500000000 AS start_ns, last_seen_ns - 250000000 AS end_ns,
        run_id AS handoff_run_id, verifier AS outcome_verifier,
        outcome_result, 'rcpt' || rn AS outcome_receipt_id
    FROM rs
    WHERE outcome_result IS NOT NULL
),
run AS (
    SELECT
        trace_id, lpad(to_hex((1::BIGINT << 60) + rn * 2 + 1), 16, '0') AS span_id,
        'handoff.run' AS name, service, first_seen_ns AS start_ns, last_seen_ns AS end_ns,
        run_id AS handoff_run_id, status AS run_status, first_seen_ns AS run_started,
        turns AS run_turns, final_agent AS run_final_agent
    FROM rs
),
evidence AS (
    SELECT * FROM request
    UNION ALL BY NAME SELECT * FROM accept
    UNION ALL BY NAME SELECT * FROM wait
    UNION ALL BY NAME SELECT * FROM decision
    UNION ALL BY NAME SELECT * FROM outcome
    UNION ALL BY NAME SELECT * FROM run
)
SELECT *, end_ns + 200000000 AS received_ns, $commit_seq::BIGINT AS commit_seq
FROM evidence
ORDER BY received_ns, span_id
;
DROP TABLE gen_h
;
-- @section day
-- engine/__init__.py daily_key: delegations stay out; the base verdict decides the reason.
INSERT INTO handoff_daily BY NAME
SELECT
    DATE '1970-01-01' + (first_seen_ns // 86400000000000)::INTEGER AS day,  -- UTC, as daily_key
    coalesce(service, '') AS service,
    coalesce(from_agent, '') AS from_agent,
    coalesce(to_agent, '') AS to_agent,
    CASE verdict WHEN 'route_rejected' THEN 'route'
                 WHEN 'contract_rejected' THEN coalesce(rejection_reason, '') ELSE '' END
        AS reason,
    count(*) AS handoffs
FROM handoffs
WHERE first_seen_ns >= $lo AND first_seen_ns < $hi AND kind IS DISTINCT FROM 'delegation'
GROUP BY ALL
ORDER BY ALL
;
-- Every handoff but delegations, under the verdict its timeline ends in
-- (engine/__init__.py edge_key, engine step 21).
INSERT INTO edge_hourly BY NAME
SELECT
    first_seen_ns // 3600000000000 AS hour,
    coalesce(service, '') AS service,
    coalesce(from_agent, '') AS from_agent,
    coalesce(to_agent, '') AS to_agent,
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
         WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END AS verdict,
    coalesce(route_declared = false, false) AS undeclared,
    count(*) AS handoffs
FROM handoffs
WHERE first_seen_ns >= $lo AND first_seen_ns < $hi AND kind IS DISTINCT FROM 'delegation'
GROUP BY ALL
ORDER BY ALL
;
INSERT INTO edge_daily BY NAME
SELECT hour // 24 AS day, service, from_agent, to_agent, verdict, undeclared,
       sum(handoffs)::BIGINT AS handoffs
FROM edge_hourly
WHERE hour >= $lo // 3600000000000 AND hour < $hi // 3600000000000
GROUP BY ALL
ORDER BY ALL
;
-- The newest 20 runs per bucket and edge, newest first (engine EDGE_RUNS_KEPT).
INSERT INTO edge_runs BY NAME
SELECT hour, service, from_agent, to_agent, list(run_id ORDER BY newest DESC, run_id) AS runs
FROM (
    SELECT *
    FROM (
        SELECT first_seen_ns // 3600000000000 AS hour, coalesce(service, '') AS service,
               coalesce(from_agent, '') AS from_agent, coalesce(to_agent, '') AS to_agent,
               run_id, max(first_seen_ns) AS newest
        FROM handoffs
        WHERE first_seen_ns >= $lo AND first_seen_ns < $hi
        GROUP BY ALL
    )
    QUALIFY row_number() OVER (
        PARTITION BY hour, service, from_agent, to_agent ORDER BY newest DESC, run_id
    ) <= 20
)
GROUP BY ALL
ORDER BY ALL
;
INSERT INTO edge_runs_daily BY NAME
SELECT day, service, from_agent, to_agent, list(run_id ORDER BY newest DESC, run_id) AS runs
FROM (
    SELECT *
    FROM (
        SELECT first_seen_ns // 86400000000000 AS day, coalesce(service, '') AS service,
               coalesce(from_agent, '') AS from_agent, coalesce(to_agent, '') AS to_agent,
               run_id, max(first_seen_ns) AS newest
        FROM handoffs
        WHERE first_seen_ns >= $lo AND first_seen_ns < $hi
        GROUP BY ALL
    )
    QUALIFY row_number() OVER (
        PARTITION BY day, service, from_agent, to_agent ORDER BY newest DESC, run_id
    ) <= 20
)
GROUP BY ALL
ORDER BY ALL
;
-- @section finish
-- The first outcome each service reported (a verifier's span): from then on its
-- completed runs are expected to be verified.
INSERT INTO services BY NAME
SELECT service, min(CASE WHEN outcome_result IS NOT NULL THEN last_seen_ns - 500000000 END)
    AS first_outcome_ns
FROM runs
GROUP BY ALL
ORDER BY ALL
;
-- Runs per day, service and the verdict their timeline ends in (engine/__init__.py:
-- run_daily_key, engine step 23); the history reports no usage, so its sums are 0.
INSERT INTO run_daily BY NAME
SELECT
    first_seen_ns // 86400000000000 AS day,
    coalesce(service, '') AS service,
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
         WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END AS verdict,
    count(*) AS runs,
    0 AS input_tokens, 0 AS output_tokens, 0 AS model_calls, 0 AS cost_nusd, 0 AS unpriced,
    0 AS burned_tokens, 0 AS burned_cost_nusd
FROM runs
GROUP BY ALL
