package main

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"
)

// BenchmarkServeReplicas measures the throughput of mombot serve processes
// sharing one Redis, with the fake Messages API answering after 500 ms like
// a real model: each iteration posts 1,000 webhooks from 100 senders (each
// sender's one after another) to a replica picked at random, 10 % of them
// twice, and waits until every message is answered. At the end it checks
// that each message was answered once, in per-sender order, with no lost
// turn. It reports msgs/s, messages answered per second, for one replica
// and for two.
//
// It needs MOMBOT_TEST_REDIS_URL and about half a minute:
//
//	MOMBOT_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run x -bench ServeReplicas -benchtime 1x ./cmd/mombot
func BenchmarkServeReplicas(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: the replicas benchmark runs server processes for half a minute")
	}
	load := replicaLoad{Senders: 100, PerSender: 10, Twice: 0.1, Seed: uint64(time.Now().UnixNano())}
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			f := newServeFixture(b, redisStoreURL(b), load.family())
			f.args = []string{"--max-turns", fmt.Sprint(load.PerSender)}
			echoMarkers(f.claude, 500*time.Millisecond)
			var procs []*servedProc
			for range replicas {
				procs = append(procs, f.start())
			}
			var runs []string
			var deliveries int
			var elapsed time.Duration
			b.ResetTimer()
			for b.Loop() {
				run := rand.Text()[:8]
				runs = append(runs, run)
				start := time.Now()
				deliveries += load.deliver(b, run, procs)
				waitSent(b, f.graph, len(runs)*load.Senders*load.PerSender, 5*time.Minute)
				elapsed += time.Since(start)
			}
			b.StopTimer()
			for _, p := range procs {
				p.stop()
			}
			msgs := len(runs) * load.Senders * load.PerSender
			b.ReportMetric(float64(msgs)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(deliveries)/float64(msgs), "deliveries/msg")
			b.ReportMetric(0, "ns/op")
			for _, run := range runs {
				load.check(b, f, run)
			}
		})
	}
}
