-- Add this group commit's dropped-attribute counts (`new_drops`: service, attribute, count;
-- already summed per key, as ON CONFLICT may see each key once per statement).
INSERT INTO drops BY NAME
SELECT service, attribute, count FROM new_drops
ON CONFLICT (service, attribute) DO UPDATE SET count = drops.count + excluded.count;
