-- Engine step 22: hs_stuck, the one "stuck" predicate every read query uses (the Live
-- board, the runs list's state, /metrics, the notifier, acknowledgement counts): a run in
-- flight (no terminal run.status), silent since before $stuck_before (now − the grace
-- window, or N × grace for the notifier), and not held by a person (an open wait is the
-- Approvals page's, not a stuck run).
CREATE OR REPLACE MACRO hs_stuck(in_flight, last_activity_ns, pending_approvals, stuck_before) AS
    in_flight AND last_activity_ns < stuck_before AND pending_approvals = 0;
