-- Empty turn_entries before it is built again from the runs (engine/turns.py, `rebuild`).
DELETE FROM turn_entries;
