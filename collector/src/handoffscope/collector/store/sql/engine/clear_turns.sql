-- Empty turns before it is built again from the runs (engine/turns.py, `rebuild`).
DELETE FROM turns;
