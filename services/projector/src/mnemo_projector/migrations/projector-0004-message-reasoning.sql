-- depends: projector-0001-read-models
-- Whether memory is formed from a message (the configuration in force when it was posted): a
-- message with reasoning switched off counts no work units.
ALTER TABLE messages ADD COLUMN reasoning boolean NOT NULL DEFAULT true;
