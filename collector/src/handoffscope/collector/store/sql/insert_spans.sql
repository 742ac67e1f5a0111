-- Append the new spans of a group commit (`new_spans`, an Arrow table the writer
-- registered), stamped with the group's number ($commit_seq, for the judge; NULL when
-- called outside a group commit). BY NAME: the Arrow schema is built from semconv, the
-- table from the DDL; matching by name keeps a column-order slip from shifting values
-- into the wrong column. The stamp is bound here rather than added to the Arrow table
-- as a column of one repeated value: it costs nothing per row.
INSERT INTO spans BY NAME
SELECT *, $commit_seq::BIGINT AS commit_seq FROM new_spans;
