// Package conversation is mombot's per-person conversation memory: the domain
// types, the memory policy and the rules that keep a stored history acceptable
// to the Anthropic Messages API.
//
// A conversation belongs to one phone number. It is a list of turns, oldest
// first; a turn is every message of one exchange, from the person's message
// through the assistant's tool calls and their results to the final reply.
// Messages are kept as Messages API JSON, byte for byte, so that block types
// this package does not know (thinking blocks, citations, server tool blocks)
// survive storage and a history read twice is the same bytes twice, which is
// what the API's prompt cache needs.
//
// [Memory] applies the policy of the original design: a conversation expires
// after 30 minutes without a message, keeps at most 10 turns (the oldest whole
// turns are dropped), never stores or loads the sender "system", and replaces
// base64 images and documents by short text placeholders. Persistence is a
// [Store]; the stores live in sub-packages (jsonfile, sqlite, redis,
// postgres, and memstore in process memory) and all run the conformance
// suite in package storetest; storeurl opens one from its URL, and migrate
// copies conversations from one to another.
//
// Every store also keeps the family's shared lists ([FamilyLists]), one
// record that every process and replica sharing the store changes through
// [Memory.UpdateFamilyLists]; package assistant/lists holds their rules.
//
// Every store also keeps a usage ledger ([Memory.AddUsage],
// [Memory.UsageSince]): what each person's messages cost, per UTC day,
// apart from the conversations, so that it outlives them (the turn cap,
// [Memory.Clear], expiry and sweeps leave it alone); package usage reports
// and prices it.
//
// A conversation's key is its phone number in E.164 form (package phone);
// [Memory.Key] finds a number's conversation however the number is
// written. [WriteTranscript] and [MarshalMessages] print a history for a
// person and exactly as the API receives it; [WriteConversation] and
// [WriteSummaries] print a whole conversation and the list of them.
// [ParseTimeout] and [ParseMaxTurns] read the policy as a person
// configures it.
//
// The package holds conversation memory only: how a WhatsApp message gets
// to the assistant and its reply back is package delivery's.
//
// Apart from the conversations, every store remembers each person's recent
// messages both ways by id for a week ([RecentMessages]), so that a reply
// quoting one of them can be given its text after the conversation expired;
// [Memory.Clear] forgets them too.
//
// A family's long-term notes ([Notes], [Memory.AddNote], [Memory.ForgetNote])
// are one record per family, keyed by its id ([Family]), written through the
// same conditional update, so that ids and limits hold across processes and
// replicas on every store. The notes a person sees are taken once at the
// start of a session and stored with its conversation ([Memory.ShowNotes],
// [Memory.SaveShown], [RenderMemory]); forgetting a note removes its text
// from every record and scrubs the store. docs/memory.md has the rules.
package conversation
