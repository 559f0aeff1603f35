-- berth's store, version 5: removal (`berth project rm`, `berth task
-- archive`). Rows that history needs stay: a removed project keeps its row,
-- marked when it was removed (NULL: it is there); an archived task keeps its
-- row and its events, left out of `berth task ls` unless `--all` (NULL: not
-- archived). A removed agent is a status (`removed`), no column.
ALTER TABLE projects ADD COLUMN removed_at BIGINT;
ALTER TABLE tasks ADD COLUMN archived_at BIGINT;
