-- A project's `[[checks]]` run against each head of a PR (issue 19): one row
-- per (PR, head, check), so a head is checked once however often it is
-- looked at, and a new head gets new rows.
CREATE TABLE pr_checks (
    id          TEXT PRIMARY KEY,
    pr_id       TEXT NOT NULL REFERENCES prs (id),
    head        TEXT NOT NULL,
    name        TEXT NOT NULL,
    -- queued | in_progress | success | failure
    status      TEXT NOT NULL,
    exit_code   BIGINT,
    -- The last bytes of the check's output (stdout, then stderr).
    output_tail TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    started_at  BIGINT,
    ended_at    BIGINT,
    UNIQUE (pr_id, head, name)
);
CREATE INDEX pr_checks_by_pr ON pr_checks (pr_id, head);
