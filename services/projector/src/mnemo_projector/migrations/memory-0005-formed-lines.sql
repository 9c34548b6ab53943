-- depends: memory-0004-dreams
-- How far each representation's messages are formed: the newest deriver batch (by its newest
-- message's stream position) whose observations are all applied. Projected from the
-- ``formed_through`` of the batch's last ObservationWritten; the queue status counts a message
-- completed from then, without waiting for the representation's newest observation.
CREATE TABLE formed_lines (
    workspace text NOT NULL,
    observer text NOT NULL,
    observed text NOT NULL,
    through_seq bigint NOT NULL,
    PRIMARY KEY (workspace, observer, observed)
);
