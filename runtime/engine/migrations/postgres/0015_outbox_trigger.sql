-- SQLite's 0015: an event's outbox row is written by the store, in the
-- statement that appends the event (a trigger), instead of by a second
-- statement from berth: one round trip fewer per appended event.
CREATE FUNCTION berth_event_to_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox (event_id) VALUES (NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER session_events_to_outbox AFTER INSERT ON session_events
    FOR EACH ROW EXECUTE FUNCTION berth_event_to_outbox();
