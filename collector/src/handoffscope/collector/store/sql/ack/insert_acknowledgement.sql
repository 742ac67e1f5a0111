-- POST /api/v1/acknowledgements: one operator's acknowledgement of one target, active from
-- $now until $until (docs/api.md, Acknowledgements). The active one of the same target,
-- if any, was cleared just before (clear_acknowledgement.sql): one active per target.
INSERT INTO acknowledgements
    (event, run_id, handoff_id, service, by_name, note, created_ns, until_ns, cleared_ns)
VALUES
    ($event, $run_id, $handoff_id, $service, $by_name, $note, $now, $until, NULL);
