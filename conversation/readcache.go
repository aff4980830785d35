package conversation

import "sync"

// readCacheSize bounds the conversations a readCache holds; past it the
// cache starts again empty.
const readCacheSize = 1000

// readCache keeps the last decoded form of each conversation by its
// record's version, so that reading a conversation that has not changed
// since this Memory read or wrote it costs the store's Get and a copy, not
// a decode and a validation of every turn (passes of a JSON decoder over
// the whole history, which are most of a History call's time).
// Versions are never given to two different values of a record, so a
// version that matches is the same data.
type readCache struct {
	mu    sync.Mutex
	convs map[string]Conversation
}

// get returns a copy of phone's conversation at version, if cached.
func (r *readCache) get(phone string, version int64) (Conversation, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.convs[phone]
	if !ok || c.Version == 0 || c.Version != version {
		return Conversation{}, false
	}
	return c.clone(), true
}

// latest returns phone's cached conversation, at whatever version it was
// cached (the store may hold a later one), for [Memory.update]. It shares
// its turns with the cache: a change replaces turns, never edits one.
func (r *readCache) latest(phone string) (Conversation, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.convs[phone]
	if !ok || c.Version == 0 {
		return Conversation{}, false
	}
	return c.shallowClone(), true
}

// put caches a copy of c at c.Version.
func (r *readCache) put(c Conversation) { r.keep(c.clone()) }

// keep caches c at c.Version as it is: its caller keeps no part of it
// that it changes.
func (r *readCache) keep(c Conversation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A conversation already held replaces its copy: only a new one may
	// overflow the cache.
	if _, held := r.convs[c.Phone]; r.convs == nil || !held && len(r.convs) >= readCacheSize {
		r.convs = make(map[string]Conversation)
	}
	r.convs[c.Phone] = c
}

// drop forgets phone's conversation, so that no copy of an erased one
// stays in memory.
func (r *readCache) drop(phone string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.convs, phone)
}
