-- sending marks the head of a sender's queue whose reply is being sent
-- (delivery.Inbox.Sending) until its Done; rows written before it are
-- unmarked.
ALTER TABLE inbox ADD COLUMN sending boolean NOT NULL DEFAULT false;
