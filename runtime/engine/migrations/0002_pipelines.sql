-- berth's store, version 2: pipeline tasks, execution modes, followups,
-- choices left to a person, and the circuit breaker's count.

-- A task's own execution mode (NULL: the project's), its steps (a JSON array
-- of {command, write}; NULL for an agent task), whether all its steps may
-- write, where it came from, and its tags (a JSON array).
ALTER TABLE tasks ADD COLUMN execution_mode TEXT;
ALTER TABLE tasks ADD COLUMN steps TEXT;
ALTER TABLE tasks ADD COLUMN write_access INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN parent_task_id TEXT;
ALTER TABLE tasks ADD COLUMN source TEXT NOT NULL DEFAULT 'user';
ALTER TABLE tasks ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
-- What created it, when berth did (a followup item, an escalation): a
-- second attempt after a crash finds the task instead of creating another.
ALTER TABLE tasks ADD COLUMN origin_key TEXT;
CREATE UNIQUE INDEX tasks_origin_key ON tasks (origin_key) WHERE origin_key IS NOT NULL;

-- One row per pipeline task: its current run and where it stands. The lease
-- (owner = the executor id of a process, until = a deadline for owners on
-- other hosts) makes sure two processes never run one task's pipeline at once.
CREATE TABLE pipeline_runs (
    task_id       TEXT PRIMARY KEY REFERENCES tasks (id),
    run           BIGINT NOT NULL,
    agent         TEXT NOT NULL,
    mode          TEXT NOT NULL,
    write_granted INTEGER NOT NULL,
    next_step     BIGINT NOT NULL,
    attempt       BIGINT NOT NULL,
    -- running | waiting | blocked | succeeded | completed
    state         TEXT NOT NULL,
    -- after success: auto_approved | approved | followups_done (NULL before)
    phase         TEXT,
    access_note   TEXT,
    lease_owner   TEXT,
    lease_until   BIGINT,
    started_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

-- A decision berth leaves to a person (or takes itself in auto mode): a
-- followup item blocked by permissions, with options rerun | manual_task | skip.
CREATE TABLE pending_choices (
    id          TEXT PRIMARY KEY,
    origin_key  TEXT NOT NULL UNIQUE,
    project     TEXT NOT NULL REFERENCES projects (name),
    task_id     TEXT NOT NULL,
    agent       TEXT,
    kind        TEXT NOT NULL,
    item        TEXT NOT NULL,
    options     TEXT NOT NULL,
    -- pending | resolving | resolved
    status      TEXT NOT NULL,
    -- The process resolving it (an executor id): a choice whose resolver
    -- died is taken up again, its reruns replayed by their keys.
    resolver    TEXT,
    choice      TEXT,
    resolved_by TEXT,
    result      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX pending_choices_status ON pending_choices (status, created_at);

-- The circuit breaker: failures in a row, reset by a success or a resume.
ALTER TABLE agents ADD COLUMN consecutive_failures BIGINT NOT NULL DEFAULT 0;
