-- The order rows of a PR's review were written in, as a column: the readers
-- ordered ties of the same millisecond by SQLite's rowid, which PostgreSQL
-- has no counterpart of. `seq` counts up per PR (the next is the PR's
-- largest + 1, taken under the store's single writer); the rows written
-- before this migration keep their rowid order.
ALTER TABLE pr_comments ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_comments SET seq = rowid;
ALTER TABLE pr_threads ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_threads SET seq = rowid;
ALTER TABLE pr_reviews ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_reviews SET seq = rowid;
ALTER TABLE pr_review_requests ADD COLUMN seq BIGINT NOT NULL DEFAULT 0;
UPDATE pr_review_requests SET seq = rowid;
