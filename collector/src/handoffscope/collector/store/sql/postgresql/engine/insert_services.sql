-- New services seen in a batch (hs_new_services); known ones are left alone.
INSERT INTO services (service) SELECT service FROM hs_new_services ON CONFLICT DO NOTHING;
