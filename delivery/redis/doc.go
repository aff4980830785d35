// Package redis is the delivery package's backend on Redis, for several
// replicas of the service that share one Redis: the [Inbox] of each
// sender's messages with the record of those handled, and the per-sender
// [Locker].
//
// It works on a go-redis client its caller makes; mombot serve makes one
// of the conversation store's URL, and puts the keys under the store's
// prefix, so that a deployment's keys sit together:
//
//	<prefix>lock:<sender>          a sender's lock: its holder's random token
//	<prefix>queue:<sender>         a sender's messages waiting, oldest first
//	<prefix>sending:<sender>       the id of the head of the queue, whose reply is being sent
//	<prefix>waiting:wamid:<id>     a message is waiting in a queue
//	<prefix>seen:wamid:<id>        a message was handled (for delivery.HandledFor)
//	<prefix>handled:<sender>       the ids handled for a sender, for Erase
//
// "Reply sent" is one Lua script ([Inbox.Done]): the message leaves its
// queue and its id is recorded as handled together. Redis runs one server
// here, not a Cluster: the scripts use keys of several slots.
package redis
