-- POST /api/v1/acknowledgements, after storing one: forget acknowledgements that ended
-- (expired or cleared) before $cutoff, the store's retention window (--retention-days),
-- as the spans they spoke of are. The table is history too (?active=false), so ended
-- rows stay until then.
DELETE FROM acknowledgements
WHERE coalesce(cleared_ns, until_ns) < $cutoff;
