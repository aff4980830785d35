// Package redis is the delivery package's backend on Redis, for several
// replicas of the service that share one Redis: the per-sender [Locker].
//
// It works on the go-redis client of the conversation store
// (conversation/redis Store.Client), so that it shares its connections,
// timeouts and reconnection, and puts its keys under the same prefix:
//
//	<prefix>lock:<sender>   a sender's lock: its holder's random token
package redis
