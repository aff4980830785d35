-- inbox holds every WhatsApp message from its Push until delivery.HandledFor
-- after its Done. The primary key on id is the one check of duplicates: a
-- message waiting (handled_at null, its body kept) and one handled (its
-- body dropped) are one row each, so a push of either id is refused by the
-- same constraint. A sender's queue is its waiting rows in seq order.
CREATE TABLE inbox (
	id         text COLLATE "C" PRIMARY KEY,
	sender     text COLLATE "C" NOT NULL,
	seq        bigint GENERATED ALWAYS AS IDENTITY,
	body       bytea,
	pushed_at  timestamptz NOT NULL DEFAULT now(),
	handled_at timestamptz,
	CHECK ((handled_at IS NULL) = (body IS NOT NULL))
);

-- A sender's head, and the senders with messages waiting.
CREATE INDEX inbox_waiting ON inbox (sender, seq) WHERE handled_at IS NULL;
-- Erase of a sender, and the expiry of handled ids.
CREATE INDEX inbox_sender ON inbox (sender);
CREATE INDEX inbox_handled_at ON inbox (handled_at) WHERE handled_at IS NOT NULL;

-- sender_locks holds each sender's lock while a replica answers the
-- sender: a lease, taken by inserting the row (or by taking over one whose
-- lease has run out), renewed by its holder while it holds it, and
-- deleted on release.
CREATE TABLE sender_locks (
	sender     text COLLATE "C" PRIMARY KEY,
	token      text        NOT NULL,
	expires_at timestamptz NOT NULL
);
