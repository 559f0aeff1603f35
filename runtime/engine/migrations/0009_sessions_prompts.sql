-- berth's store, version 9: agents' sessions and their durable prompt
-- queue (issue 18; the kandev semantics of a task's prompt queue).
--
-- A session is one conversation of an agent with its task: idle, running
-- (a turn under way), waiting_for_input, ended. One non-ended primary
-- session per task. `runner` names the process (host:pid:start) running
-- its turn, so a turn whose process died is found and ended.
CREATE TABLE agent_sessions (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL REFERENCES agents (name),
    project     TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    status      TEXT NOT NULL,
    is_primary  INTEGER NOT NULL,
    runner      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    ended_at    BIGINT
);
CREATE UNIQUE INDEX agent_sessions_primary ON agent_sessions (task_id)
    WHERE is_primary = 1 AND status <> 'ended';
CREATE INDEX agent_sessions_agent ON agent_sessions (agent, created_at);

-- A prompt for an agent's session, in a durable per-agent queue ordered by
-- `seq`: queued (with the reason it waits), reserved (handed to the
-- executor under `token`, by the process `reserved_by`, its session
-- moved to running from `claimed_from`; never deleted before its
-- acknowledgement), acknowledged, replaced or purged. `task_id`
-- NULL: the agent had no session when it was sent; it goes to the first
-- session of the agent that becomes promptable. `generation`: the task's
-- queue generation when it was accepted (an archive advances it).
CREATE TABLE prompts (
    seq            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL UNIQUE,
    agent          TEXT NOT NULL REFERENCES agents (name),
    project        TEXT NOT NULL,
    task_id        TEXT,
    session_id     TEXT,
    kind           TEXT NOT NULL,
    body           TEXT NOT NULL,
    coalesce_key   TEXT,
    replace_key    TEXT,
    status         TEXT NOT NULL,
    reason         TEXT,
    token          TEXT,
    reserved_by    TEXT,
    claimed_from   TEXT,
    attempts       INTEGER NOT NULL DEFAULT 0,
    coalesced      INTEGER NOT NULL DEFAULT 0,
    generation     INTEGER NOT NULL,
    sender_kind    TEXT NOT NULL,
    sender_id      TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX prompts_pending ON prompts (agent, status, seq);
CREATE INDEX prompts_task ON prompts (task_id, status);

-- Each task's queue generation: advanced by archiving or deleting the
-- task, in the transaction that purges its prompts.
CREATE TABLE task_prompt_generations (
    task_id    TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
);

-- A `command` agent's program: its argv template as a JSON array
-- (`{prompt}`, `{prompt_file}`, `{task}`, `{workdir}`, `{session_id}` are
-- filled in per turn). NULL for every other agent.
ALTER TABLE agents ADD COLUMN command TEXT;
