-- Append the spans of a group commit not stored yet (`new_spans`, registered by the
-- writer), stamped with the group's number, and return the keys of exactly those: a span
-- another collector (or an earlier try of the same export) stored first meets the
-- primary key and is skipped — counted once, however many collectors receive it.
INSERT INTO spans
SELECT n.*, $commit_seq::bigint FROM new_spans AS n
ON CONFLICT (trace_id, span_id, start_ns) DO NOTHING
RETURNING trace_id, span_id;
