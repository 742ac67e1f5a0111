-- Append the new spans of a group commit (`new_spans`, an Arrow table the writer
-- registered). BY NAME: the Arrow schema is built from semconv, the table from the DDL;
-- matching by name keeps a column-order slip from shifting values into the wrong column.
INSERT INTO spans BY NAME
SELECT * FROM new_spans;
