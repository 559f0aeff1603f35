-- berth's store, version 10: a PR's review feedback (issue 19) — comments
-- and their threads, reviews (approve / request changes) and review
-- requests.
--
-- A top-level comment starts a thread whose id is that comment's id; a
-- reply names the thread. `author_kind`: user (a person), agent (through
-- a `pr_comment` action, whose id is `action_id`: a retry of the action
-- finds the comment it wrote), or bot (berth's own status comments, which
-- never block readiness). `path`/`line`/`commit_sha`: a comment on a line
-- of a file at a commit of the PR's branch; NULL on the PR as a whole.
CREATE TABLE pr_comments (
    id          TEXT PRIMARY KEY,
    pr_id       TEXT NOT NULL REFERENCES prs (id),
    thread_id   TEXT NOT NULL,
    author_kind TEXT NOT NULL,
    author      TEXT NOT NULL,
    body        TEXT NOT NULL,
    path        TEXT,
    line        INTEGER,
    commit_sha  TEXT,
    action_id   TEXT UNIQUE,
    created_at  BIGINT NOT NULL
);
CREATE INDEX pr_comments_by_thread ON pr_comments (pr_id, thread_id, created_at);

-- One row per thread: who resolved it and when (NULL: unresolved). The
-- `pr_resolve_thread` action that resolved it, when an agent did.
CREATE TABLE pr_threads (
    id                TEXT PRIMARY KEY,
    pr_id             TEXT NOT NULL REFERENCES prs (id),
    author_kind       TEXT NOT NULL,
    resolved_by_kind  TEXT,
    resolved_by       TEXT,
    resolved_at       BIGINT,
    resolve_action_id TEXT,
    created_at        BIGINT NOT NULL
);
CREATE INDEX pr_threads_by_pr ON pr_threads (pr_id, created_at);

-- A review submitted on a PR: `state` approve | request_changes, by a
-- person, at the head the forge had then. An actor's latest review is the
-- one that counts. Recorded on the PR only: it does not resolve the task's
-- gate (merging or closing the PR does).
CREATE TABLE pr_reviews (
    id          TEXT PRIMARY KEY,
    pr_id       TEXT NOT NULL REFERENCES prs (id),
    state       TEXT NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor       TEXT NOT NULL,
    body        TEXT,
    head        TEXT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX pr_reviews_by_pr ON pr_reviews (pr_id, actor, created_at);

-- A review asked of `reviewer`; cleared when that reviewer submits a
-- review (or the request is asked again: one open request per reviewer).
CREATE TABLE pr_review_requests (
    id            TEXT PRIMARY KEY,
    pr_id         TEXT NOT NULL REFERENCES prs (id),
    reviewer      TEXT NOT NULL,
    requested_by  TEXT NOT NULL,
    requested_at  BIGINT NOT NULL,
    cleared_at    BIGINT,
    cleared_by    TEXT
);
CREATE UNIQUE INDEX pr_review_requests_open ON pr_review_requests (pr_id, reviewer)
    WHERE cleared_at IS NULL;
