package assistant

// QueueLen returns how many callers hold or wait for key's lock.
func QueueLen(l *LocalLocker, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue[key])
}

// Locker returns the assistant's locker, which tests know to be local.
func (a *Assistant) Locker() *LocalLocker { return a.locker.(*LocalLocker) }
