-- berth's store, version 4: where a file action's path leads on the host
-- (its links followed within its mount), recorded when it is proposed and
-- again when a person approves it, so the person sees where it would act.
-- NULL: not a file action, or recorded before this version.
ALTER TABLE proposed_actions ADD COLUMN resolved_path TEXT;
