-- Retention: spans that ended before the cutoff ($cutoff, epoch ns) go. The sender's end
-- time, not received_ns, so a span's age is the age of the event it records (and a test
-- can make old spans by setting their times).
DELETE FROM spans WHERE end_ns < $cutoff;
