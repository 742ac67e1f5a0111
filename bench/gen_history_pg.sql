-- A handoff history written straight into the derived tables of a PostgreSQL store,
-- set-based (INSERT ... SELECT over generate_series): what bench_scale_out.py needs to
-- measure the query API at scale without pushing millions of spans through a collector.
-- Statements run in order, separated by lines holding only ';'. Parameters: %(handoffs)s,
-- %(now_ns)s, %(span_ns)s (the history's length), %(grace_ns)s (the collector's grace).
--
-- Shaped like gen_history.py's DuckDB history: the same services and agents, runs of
-- 1-6 handoffs (the same size cycle, mean 3.3) evenly over the span, the same mix of
-- verdicts (undeclared routes 3%, stale control 1%, open tool calls 1%, missing context
-- 1%, contract rejections 3% over every reason, waits 2% of which a fifth stay open,
-- three-agent loops in 2% of runs, failed / max_turns runs, completed runs without a
-- passing verifier), runs still in flight and handoffs never admitted in the last 15
-- minutes. "Random" is hashint8 of the row number: the same history every time.
-- No spans: the derived tables are what the dashboard's queries read (a run's span
-- list comes back empty), and the rollups are computed from the handoff rows, so they
-- agree with them exactly.
--
-- Simplified against the engine: a run's own verdict timeline has no flips (its
-- handoffs' do), and a refused handoff still counts on the run's path.

CREATE TEMP TABLE gen_h ON COMMIT DROP AS
WITH sizes(r, k) AS (
    VALUES (0, 1), (1, 2), (2, 2), (3, 3), (4, 3), (5, 3), (6, 4), (7, 4), (8, 5), (9, 6)
),
shape AS (  -- 10 runs, 33 handoffs: offset in the block -> (run in block, seq)
    SELECT (row_number() OVER (ORDER BY r, seq) - 1)::int AS o, r, seq
    FROM sizes, generate_series(1, k) AS seq
),
base AS (
    SELECT
        i,
        (i / 33) * 10 + shape.r AS rn,
        shape.seq,
        mod(hashint8(i)::bigint + 2147483648, 1000) AS f,
        mod(hashint8(i + 4000000000000)::bigint + 2147483648, 1000) AS g,
        ceil(%(handoffs)s / 33.0)::bigint * 10 AS runs_total
    FROM generate_series(0, %(handoffs)s::bigint - 1) AS i
    JOIN shape ON shape.o = mod(i, 33)
),
run_facts AS (
    SELECT
        *,
        least(
            %(now_ns)s - %(span_ns)s + rn * (%(span_ns)s / runs_total),
            %(now_ns)s - 60000000000
        ) AS t0,
        mod(hashint8(-rn - 1)::bigint + 2147483648, 1000) AS rf,
        mod(rn, 3) AS svc
    FROM base
),
placed AS (
    SELECT
        *,
        t0 > %(now_ns)s - 900000000000 AS recent,
        rf < 20 AS loop_run,
        (ARRAY['billing-app', 'support-desk', 'travel-planner'])[svc + 1] AS service,
        CASE svc
            WHEN 0 THEN ARRAY['triage', 'billing', 'refunds', 'fraud', 'escalation', 'ledger']
            WHEN 1 THEN ARRAY['frontdesk', 'tech', 'accounts', 'returns', 'supervisor']
            ELSE ARRAY['planner', 'flights', 'hotels', 'payments', 'concierge', 'visa', 'cars']
        END AS agents,
        t0 + seq::bigint * 2000000000 AS req_ns
    FROM run_facts
),
moved AS (
    -- Agent at path position p: steps of 17 never land on the same agent twice in a row
    -- (17 mod 5, 6 and 7 is not 0); a loop run cycles through three of them.
    SELECT
        *,
        agents[1 + mod(rn * 31 + (CASE WHEN loop_run THEN mod(seq - 1, 3) ELSE seq - 1 END) * 17,
                       cardinality(agents))::int] AS from_agent,
        agents[1 + mod(rn * 31 + (CASE WHEN loop_run THEN mod(seq, 3) ELSE seq END) * 17,
                       cardinality(agents))::int] AS to_agent,
        recent AND f < 50 AS never_admitted,
        f >= 60 AND f < 80 AS wait_seen,
        mod(hashint8(i + 8000000000000)::bigint + 2147483648, 1000) < 800 AND NOT recent AS decided
    FROM placed
)
SELECT
    *,
    req_ns + (50 + mod(i * 7, 850)) * 1000000 AS acc_ns,
    CASE
        WHEN never_admitted THEN 'in_flight'
        WHEN g < 30 THEN 'route_rejected'
        WHEN f < 10 THEN 'stale_control'
        WHEN f < 20 THEN 'open_tool_protocol'
        WHEN f < 30 THEN 'context_incomplete'
        WHEN f < 60 THEN 'contract_rejected'
        WHEN loop_run AND seq >= 3 THEN 'loop'
        WHEN wait_seen AND NOT decided AND (f < 65 OR f >= 75) THEN 'wait_uncertain'
        WHEN wait_seen AND NOT decided THEN 'waiting_on_approval'
        ELSE 'healthy'
    END AS verdict
FROM moved
;
ALTER TABLE gen_h ADD COLUMN deadline_ns bigint
;
UPDATE gen_h SET deadline_ns = acc_ns + 1000000000
    + (ARRAY[600, 3600, 86400]::bigint[])[1 + mod(i, 3)::int] * 1000000000
WHERE wait_seen
;
CREATE INDEX ON gen_h (rn)
;
INSERT INTO handoffs
SELECT
    i + 1, 'run-' || lpad(rn::text, 9, '0'),
    ('x' || substr(md5('run-' || lpad(rn::text, 9, '0')), 31, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 29, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 27, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 25, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 23, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 21, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 19, 2)
         || substr(md5('run-' || lpad(rn::text, 9, '0')), 17, 2))::bit(64)::bigint,
    'h' || seq, service, seq, from_agent, to_agent, seq,
    req_ns, CASE WHEN never_admitted THEN req_ns + 2000000 ELSE acc_ns + 1000000 END,
    lpad(to_hex(rn), 12, '0'), CASE WHEN loop_run THEN 1 ELSE seq + 1 END,
    1 + mod(i, 8), 8 + mod(i, 13), g >= 30,
    CASE WHEN never_admitted THEN NULL ELSE to_agent END,
    CASE WHEN never_admitted THEN NULL WHEN f < 10 THEN to_agent ELSE from_agent END,
    CASE WHEN never_admitted THEN NULL ELSE to_agent END,
    'call_' || rn || '_' || seq,
    CASE WHEN never_admitted THEN NULL ELSE NOT (f >= 10 AND f < 20) END,
    ARRAY['order_id', 'customer_tier'],
    CASE WHEN f >= 20 AND f < 30 AND NOT never_admitted THEN ARRAY['customer_tier'] ELSE '{}' END,
    CASE WHEN never_admitted THEN NULL ELSE NOT (f >= 30 AND f < 60) END,
    CASE WHEN f >= 30 AND f < 60 AND NOT never_admitted
         THEN (ARRAY['invalid', 'stale', 'unauthorized', 'no_budget', 'vague_goal'])[1 + mod(i, 5)::int]
    END,
    '{}', 'specialist_needed', NULL,
    loop_run AND seq >= 3, false, false, NULL,
    wait_seen, CASE WHEN wait_seen AND f >= 65 THEN 'finance-oncall' END,
    CASE WHEN wait_seen THEN 'refund_over_limit' END, deadline_ns,
    CASE WHEN wait_seen THEN 'tok' || rn END, CASE WHEN wait_seen THEN f < 75 END,
    CASE WHEN wait_seen AND decided THEN 'approved' END,
    verdict,
    CASE verdict WHEN 'in_flight' THEN req_ns + %(grace_ns)s
                 WHEN 'waiting_on_approval' THEN deadline_ns END,
    CASE verdict WHEN 'in_flight' THEN 'destination_not_started'
                 WHEN 'waiting_on_approval' THEN 'approval_overdue' END,
    NULL, NULL,
    CASE verdict WHEN 'healthy' THEN NULL
                 WHEN 'in_flight' THEN req_ns + %(grace_ns)s
                 WHEN 'waiting_on_approval' THEN deadline_ns
                 ELSE -9223372036854775808 END,
    'handoff', '{}', NULL
FROM gen_h
;
-- The run rows: a run's verdict is the first rule any of its handoffs or its own facts
-- fail (DESIGN §4), by position in this list.
INSERT INTO runs
WITH per_run AS (
    SELECT
        rn, min(t0) AS t0, min(rf) AS rf, min(service) AS service, bool_or(loop_run) AS loop_run,
        bool_or(recent) AS recent, count(*)::int AS k,
        max(CASE WHEN never_admitted THEN req_ns + 2000000 ELSE acc_ns + 1000000 END) AS last_ns,
        max(req_ns) AS last_handoff_ns,
        (array_agg(from_agent ORDER BY seq))[1:1] || array_agg(to_agent ORDER BY seq) AS path,
        (array_agg(to_agent ORDER BY seq DESC))[1] AS last_agent,
        min(array_position(ARRAY['route_rejected', 'stale_control', 'open_tool_protocol',
            'context_incomplete', 'contract_rejected', 'destination_not_started', 'loop',
            'false_complete', 'approval_overdue', 'wait_uncertain', 'run_failed',
            'waiting_on_approval', 'in_flight', 'healthy'], verdict)) AS worst,
        count(*) FILTER (WHERE wait_seen AND NOT decided)::int AS open_waits
    FROM gen_h
    GROUP BY rn
),
facts AS (
    SELECT
        *,
        'run-' || lpad(rn::text, 9, '0') AS run_id,
        last_ns + 2000000000 AS end_ns,
        mod(hashint8(rn + 5000000000000)::bigint + 2147483648, 1000) AS rf2,
        mod(hashint8(rn + 6000000000000)::bigint + 2147483648, 1000) AS rf3
    FROM per_run
),
ended AS (
    SELECT
        *,
        CASE
            WHEN recent AND rf < 500 THEN 'started'
            WHEN rf2 < 40 THEN 'failed'
            WHEN rf2 < 60 OR loop_run THEN 'max_turns'
            ELSE 'completed'
        END AS status
    FROM facts
),
verified AS (
    SELECT
        *,
        CASE WHEN status = 'completed' AND rf3 < 900 THEN
            CASE WHEN rf3 < 837 THEN 'pass' ELSE 'fail' END
        END AS outcome_result
    FROM ended
),
judged AS (
    SELECT
        *,
        status = 'completed' AND outcome_result IS DISTINCT FROM 'pass' AS false_complete,
        status IN ('failed', 'max_turns') AS failed
    FROM verified
)
SELECT
    rn + 1, run_id,
    ('x' || substr(md5(run_id), 31, 2) || substr(md5(run_id), 29, 2)
         || substr(md5(run_id), 27, 2) || substr(md5(run_id), 25, 2)
         || substr(md5(run_id), 23, 2) || substr(md5(run_id), 21, 2)
         || substr(md5(run_id), 19, 2) || substr(md5(run_id), 17, 2))::bit(64)::bigint,
    service, t0, end_ns, t0 + 200000000, end_ns + 200000000, t0,
    CASE WHEN status <> 'started' THEN end_ns END, last_handoff_ns, status,
    CASE WHEN status <> 'started' THEN last_agent END, k, last_agent, k, path,
    loop_run, CASE WHEN loop_run THEN path[1:3] ELSE '{}' END, CASE WHEN loop_run THEN 1 ELSE 0 END,
    false_complete, failed, outcome_result, CASE WHEN outcome_result IS NOT NULL THEN 'task_check' END,
    open_waits,
    (ARRAY['route_rejected', 'stale_control', 'open_tool_protocol', 'context_incomplete',
           'contract_rejected', 'destination_not_started', 'loop', 'false_complete',
           'approval_overdue', 'wait_uncertain', 'run_failed', 'waiting_on_approval',
           'in_flight', 'healthy'])[least(
        worst,
        CASE WHEN loop_run THEN 7 END,
        CASE WHEN false_complete THEN 8 END,
        CASE WHEN failed THEN 11 END
    )],
    NULL, NULL, NULL, NULL,
    0, false, true, '{}', false, NULL
FROM judged
;
-- Turns, as gen_history_duckdb.sql makes them: every three consecutive runs of a service
-- are one conversation (its first run's start agent is learned as an entry agent), so the
-- conversation, run detail and weekly continuity queries read a history where every run
-- is a turn (set after the insert: its columns are given by position, and these come
-- after the usage columns).
UPDATE runs SET
    conversation_id = c.conversation_id,
    start_agent = runs.path[1],
    first_to_agent = runs.path[2],
    entry_agents = '{}'
FROM (
    SELECT
        row_seq,
        'conv-' || service || '-'
            || ((row_number() OVER (PARTITION BY service ORDER BY row_seq) - 1) / 3)::text
            AS conversation_id
    FROM runs
) AS c
WHERE runs.row_seq = c.row_seq
;
INSERT INTO waits
SELECT
    row_number() OVER (ORDER BY i), h.run_id, h.run_key, h.handoff_id, h.service,
    h.from_agent, h.to_agent, h.wait_owner, h.wait_reason, h.wait_deadline_ns,
    h.wait_resume_token_id, h.wait_state_persisted, NULL, g.acc_ns + 1000000000,
    CASE WHEN h.wait_owner IS NULL THEN ARRAY['owner'] ELSE '{}' END
        || CASE WHEN NOT h.wait_state_persisted THEN ARRAY['state_persisted'] ELSE '{}' END,
    -- The wait's own verdict (its handoff may have failed an earlier rule).
    CASE WHEN g.f < 65 OR g.f >= 75 THEN 'wait_uncertain' ELSE 'waiting_on_approval' END,
    CASE WHEN g.f >= 65 AND g.f < 75 THEN g.deadline_ns END,
    CASE WHEN g.f >= 65 AND g.f < 75 THEN 'approval_overdue' END
FROM gen_h AS g
JOIN handoffs AS h ON h.row_seq = g.i + 1
WHERE g.wait_seen AND NOT g.decided
;
INSERT INTO handoff_daily
SELECT
    DATE '1970-01-01' + (first_seen_ns / 86400000000000)::int, service, from_agent, to_agent,
    CASE verdict WHEN 'route_rejected' THEN 'route'
                 WHEN 'contract_rejected' THEN coalesce(rejection_reason, '') ELSE '' END,
    count(*)
FROM handoffs
GROUP BY 1, 2, 3, 4, 5
;
-- Every handoff but delegations, under the verdict its timeline ends in (engine/__init__.py:
-- edge_key, PostgreSQL engine step 14).
INSERT INTO edge_hourly
SELECT first_seen_ns / 3600000000000, service, from_agent, to_agent,
       CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
            WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
       route_declared IS FALSE, count(*)
FROM handoffs
WHERE kind IS DISTINCT FROM 'delegation'
GROUP BY 1, 2, 3, 4, 5, 6
;
INSERT INTO edge_daily
SELECT hour / 24, service, from_agent, to_agent, verdict, undeclared, sum(handoffs)
FROM edge_hourly
GROUP BY 1, 2, 3, 4, 5, 6
;
-- The newest 20 runs per bucket and edge, newest first.
INSERT INTO edge_runs
SELECT hour, service, from_agent, to_agent, array_agg(run_id ORDER BY newest DESC, run_id)
FROM (
    SELECT *, row_number() OVER (
        PARTITION BY hour, service, from_agent, to_agent ORDER BY newest DESC, run_id
    ) AS n
    FROM (
        SELECT first_seen_ns / 3600000000000 AS hour, service, from_agent, to_agent, run_id,
               max(first_seen_ns) AS newest
        FROM handoffs
        GROUP BY 1, 2, 3, 4, 5
    ) AS per_run
) AS ranked
WHERE n <= 20
GROUP BY 1, 2, 3, 4
;
INSERT INTO edge_runs_daily
SELECT day, service, from_agent, to_agent, array_agg(run_id ORDER BY newest DESC, run_id)
FROM (
    SELECT *, row_number() OVER (
        PARTITION BY day, service, from_agent, to_agent ORDER BY newest DESC, run_id
    ) AS n
    FROM (
        SELECT first_seen_ns / 86400000000000 AS day, service, from_agent, to_agent, run_id,
               max(first_seen_ns) AS newest
        FROM handoffs
        GROUP BY 1, 2, 3, 4, 5
    ) AS per_run
) AS ranked
WHERE n <= 20
GROUP BY 1, 2, 3, 4
;
INSERT INTO services
SELECT service, min(first_seen_ns) FROM runs GROUP BY 1
ON CONFLICT (service) DO UPDATE SET first_outcome_ns = excluded.first_outcome_ns
;
-- Runs per day, service and the verdict their timeline ends in (engine run_daily_key,
-- PostgreSQL engine step 16); the history reports no usage, so its sums are 0.
INSERT INTO run_daily
SELECT first_seen_ns / 86400000000000, coalesce(service, ''),
       CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
            WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
       count(*), 0, 0, 0, 0, 0, 0, 0
FROM runs
GROUP BY 1, 2, 3
