-- SQLite's 0013: the order rows of a PR's review were written in, as a
-- column (`seq`, counting up per PR), in place of SQLite's rowid. Rows
-- written before it take their (time, id) order.
ALTER TABLE pr_comments ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_comments c SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM pr_comments) o WHERE o.id = c.id;
ALTER TABLE pr_threads ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_threads t SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM pr_threads) o WHERE o.id = t.id;
ALTER TABLE pr_reviews ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_reviews r SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM pr_reviews) o WHERE o.id = r.id;
ALTER TABLE pr_review_requests ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_review_requests q SET seq = o.n FROM (SELECT id, row_number() OVER (ORDER BY requested_at, id) AS n FROM pr_review_requests) o WHERE o.id = q.id;
