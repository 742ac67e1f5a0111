-- GET /api/v1/drops: attribute NAMES the allowlist removed, per service, all time
-- (the store's `drops` table; values are never kept), most dropped first.
SELECT service, attribute, count
FROM drops
ORDER BY count DESC, service, attribute;
