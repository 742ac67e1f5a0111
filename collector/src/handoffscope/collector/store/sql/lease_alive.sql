-- Is the session (and the lease it holds) still there? A round trip that fails when not.
SELECT 1;
