// Package delivery is a message's life between its acknowledgement and
// its reply: the per-sender lock ([Locker], [Local] in one process, one on
// Redis in delivery/redis for replicas).
package delivery
