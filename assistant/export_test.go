package assistant

import "github.com/mombot/mombot/conversation"

// QueueLen returns how many callers hold or wait for key's lock.
func QueueLen(l *LocalLocker, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue[key])
}

// Locker returns the assistant's locker, which tests know to be local.
func (a *Assistant) Locker() *LocalLocker { return a.locker.(*LocalLocker) }

// Body renders the request body for history and msgs.
func (a *Assistant) Body(history, msgs []conversation.Message) ([]byte, error) {
	return a.body(history, msgs, "")
}
