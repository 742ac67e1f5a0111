-- Add this group commit's dropped-attribute counts (`new_drops`: service, attribute, count;
-- summed per key already, as ON CONFLICT may see each key once per statement).
INSERT INTO drops (service, attribute, count)
SELECT service, attribute, count FROM new_drops
ON CONFLICT (service, attribute) DO UPDATE SET count = drops.count + excluded.count;
