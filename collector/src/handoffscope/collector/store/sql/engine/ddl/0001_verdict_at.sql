-- Engine step 1: the verdict of a stored timeline at query time.
-- The engine stores each time-based verdict as a timeline (evidence.Timeline): the
-- verdict before any threshold, then up to two (instant, verdict) flips — grace expiry
-- turns `in_flight` into `destination_not_started`, a wait deadline turns
-- `waiting_on_approval` into `approval_overdue`. Every read query judges "now" with this
-- one macro, so the API, the filters and the aggregates agree on what is current.
-- NULL flips compare as NULL and fall through to the earlier verdict.
CREATE OR REPLACE MACRO hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, now_ns) AS
    CASE
        WHEN flip2_ns <= now_ns THEN flip2_verdict
        WHEN flip1_ns <= now_ns THEN flip1_verdict
        ELSE verdict
    END;
