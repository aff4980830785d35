package redis

// DefaultPrefix is the key prefix when an options' Prefix is empty: the
// conversation store's default, so that one deployment's keys sit
// together.
const DefaultPrefix = "mombot:"
