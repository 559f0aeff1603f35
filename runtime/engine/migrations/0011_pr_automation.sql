-- berth's store, version 11: per-PR automation (issue 19; kandev's task
-- PR automation): the switches a person sets on a task's PR, and the
-- checkpoints that keep each cycle from prompting twice, across restarts.
--
-- One row per PR (its task beside it). The switches: `fix` (auto-fix
-- rounds), `merge` (auto-merge), `on_review_request` and `on_merged` /
-- `on_closed` (lifecycle prompts). `prompt_override`: the task's own
-- auto-fix prompt, used instead of the project's.
--
-- Auto-fix: `fix_rounds` prompts accepted or queued since the switch was
-- last turned on (at most 10; the 11th is refused and `fix_paused` set);
-- `fix_signature` and `fix_checkpoint` (JSON) the prompt-worthy snapshot
-- last prompted; `fix_session` the session that got it; `fix_prompt` the
-- queue row.
--
-- Auto-merge: `merge_signature` the readiness last acted on (proposed, or
-- failed: then not retried until it changes), `merge_action` the
-- `git_merge` action proposed for it, `merge_failed` whether it failed.
--
-- Lifecycle: `reviewer_login` the reviewer identity the baseline belongs
-- to; `review_requested` the last observation (NULL: no baseline yet);
-- `terminal_prompted` the terminal state (merged, closed) already
-- prompted for.
--
-- `observed_head`: the PR branch's tip last seen by an evaluation (a move
-- sends the task back to review). `last_error`: the last failure of any
-- cycle, cleared by a later success of the cycle that failed.
CREATE TABLE pr_automation (
    pr_id              TEXT PRIMARY KEY REFERENCES prs (id),
    task_id            TEXT,
    fix                INTEGER NOT NULL DEFAULT 0,
    merge              INTEGER NOT NULL DEFAULT 0,
    on_review_request  INTEGER NOT NULL DEFAULT 0,
    on_merged          INTEGER NOT NULL DEFAULT 0,
    on_closed          INTEGER NOT NULL DEFAULT 0,
    prompt_override    TEXT,
    fix_rounds         INTEGER NOT NULL DEFAULT 0,
    fix_paused         INTEGER NOT NULL DEFAULT 0,
    fix_signature      TEXT,
    fix_checkpoint     TEXT,
    fix_session        TEXT,
    fix_prompt         TEXT,
    merge_signature    TEXT,
    merge_action       TEXT,
    merge_failed       INTEGER NOT NULL DEFAULT 0,
    reviewer_login     TEXT,
    review_requested   INTEGER,
    terminal_prompted  TEXT,
    observed_head      TEXT,
    last_error         TEXT,
    error_cycle        TEXT,
    updated_at         BIGINT NOT NULL
);
CREATE INDEX pr_automation_by_task ON pr_automation (task_id);

-- A project's edited prompt templates (`ci-auto-fix`): seeding inserts
-- the embedded default only where no row is, so a person's edit is never
-- overwritten; a missing row falls back to the embedded text.
CREATE TABLE prompt_templates (
    project     TEXT NOT NULL,
    name        TEXT NOT NULL,
    body        TEXT NOT NULL,
    edited      INTEGER NOT NULL DEFAULT 0,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (project, name)
);

-- The process (host:pid:start) running a check: a check whose process is
-- gone (berth was killed mid-check) is queued again at the next look
-- instead of staying `in_progress` until its deadline.
ALTER TABLE pr_checks ADD COLUMN claimed_by TEXT;
