-- berth's store, version 15: an event's outbox row is written by the store
-- itself, in the statement that appends the event (a trigger), instead of
-- by a second statement from berth. The same rows as before — every event
-- gets one, in its own transaction — for one round trip to the store
-- fewer per appended event (issue 17: each statement is a hop to the
-- connection's worker thread and back, ~50 µs; an executed action appends
-- two events).
CREATE TRIGGER session_events_to_outbox AFTER INSERT ON session_events
BEGIN
    INSERT INTO outbox (event_id) VALUES (NEW.id);
END;
