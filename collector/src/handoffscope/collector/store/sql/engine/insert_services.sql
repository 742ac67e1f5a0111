-- Remember services seen for the first time (hs_new_services).
INSERT INTO services SELECT service FROM hs_new_services ON CONFLICT DO NOTHING;
