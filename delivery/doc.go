// Package delivery is a message's life from its acknowledgement to its
// reply: a durable [Inbox] (a [File] for one process, one on Redis in
// delivery/redis for replicas) that also remembers the ids handled, the
// per-sender [Locker] ([Local], or the Redis one), and the [Pipeline]
// that takes each message through its states, calling a [Handler] to
// answer and send (in mombot serve, the answerer that joins the WhatsApp
// Client to the assistant: docs/architecture.md).
//
// # A message's life
//
//	POST /webhook   whatsapp.Server: signature, business number, family, kind
//	   │
//	   ▼
//	received ── Pipeline.Accept ── Inbox.Push ─┬─ ErrDuplicate (waiting, or handled in
//	   │                                       │  the last 7 days): skipped, 200
//	   │                                       ├─ failed: 503, Meta delivers it again;
//	   │                                       │  or with MemoryFallback held in memory, 200
//	   │                                       └─ kept: 200
//	   ▼
//	queued ◄── a drain: at once, at each pass (every minute), at the next start,
//	   │       or in another replica; it holds the sender's Locker lock and
//	   │       takes the head of the sender's queue (Peek)
//	   │  marked "sending" and not in hand in this process: another holder
//	   │  (or this process before a restart) may have sent its reply; wait
//	   │  SendingGrace (15 s) for it to record it, Peek again, and answer
//	   │  it only if it is still the head (its holder died)
//	   ▼
//	answering ── Handler.Answer, given the lock held ──── ErrSkip (too old,
//	   │         lock lost or shutdown: stays queued       unreadable) ──────┐
//	   ▼                                                                    │
//	reply in hand ── Inbox.Sending marks it "sending" (durable), then       │
//	   │             Handler.Send ── ErrTemporary: the rest is kept in the  │
//	   │             process and sent at a later pass, not asked again;     │
//	   │             the mark failed: not sent, the lock held, the mark     │
//	   │             tried again every second; lock lost before sending:    │
//	   │             kept so, not sent, stays queued;                       │
//	   │             refused for good: logged, done with                    │
//	   ▼                                                                    │
//	sent ◄──────────────────────────────────────────────────────────────────┘
//	   │  Inbox.Done: ONE atomic write (File: one rewrite; Redis: one script)
//	   │  removes the message from its queue and records its id for
//	   │  HandledFor. Done failed: the drain keeps the sender's lock and
//	   │  tries Done again every second, so that no other replica finds
//	   │  the message queued, and goes on if the lock is lost (the store
//	   │  down longer than the lease), the mark holding the next holder
//	   │  back meanwhile; only if the process stops does it remember the
//	   │  message as sent, not answer it again, and do Done again at the
//	   │  next pass.
//	   ▼
//	done
//
// "queued", its mark "sending" and "done" are durable. "answering",
// "reply in hand" and "sent" live in the process: a reply in hand is sent
// at a later pass without asking the Handler again; a message sent whose
// Done failed (a full disk, Redis down) keeps its sender's lock held until
// Done works, and is not answered again by this process. A lease cannot be
// renewed while its store is down, so the mark is what keeps a sender
// blocked for other replicas until the reply is recorded: the next holder
// waits SendingGrace, longer than a live holder needs to land its Done
// once the store answers. A drain that the Inbox or the Locker failed is
// tried again a few seconds later. After a crash, a message in those
// states is queued still and is answered anew (after the grace, if it was
// marked): at least once, and twice only if the crash falls between
// sending its reply and its Done.
//
// # Guarantees
//
//   - Acknowledged means durable: Accept returns nil only once the Inbox
//     holds the message (or, with MemoryFallback, once it is in memory,
//     where it is lost only if the process dies before answering it).
//   - Duplicates are checked once, when a message is pushed: an id waiting
//     or handled in the last [HandledFor] (seven days, as long as Meta
//     redelivers) is not kept again, across restarts and replicas.
//   - Per-sender order: one drain per sender at a time in a process, under
//     the sender's lock across processes; a sender's messages held in
//     memory come after those in the Inbox, and the later ones join them.
//   - Several replicas on Redis share the Inbox and the lock; one whose
//     lock passed to another (cut off longer than its TTL) stops before
//     sending the reply in hand, and one that sent its reply and lost the
//     lock before recording it leaves the message marked, so that the next
//     holder waits for the record rather than answering it again.
//   - Shutdown answers what was accepted, for as long as its context
//     allows; what is left stays queued for the next start.
//
// The per-sender lock is handed to [Handler.Answer] as a parameter, so
// that what it calls (the assistant) runs under it rather than taking it
// again.
package delivery
