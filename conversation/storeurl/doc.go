// Package storeurl opens a [conversation.Store] from a URL, the way
// litestream names its replicas, so that every command and the server
// choose a backend with one string:
//
//	data/conversations.json        the JSON file (jsonfile), also file:PATH
//	sqlite:data/mombot.db          SQLite (sqlite)
//	redis://HOST:PORT/DB?prefix=P  Redis (redis), rediss:// for TLS
//	postgres://USER:PASSWORD@HOST:PORT/DB?schema=S
//	                               PostgreSQL (postgres), also postgresql://
//
// [Parse] reads a URL, [Open] opens the store it names, [Same] tells
// whether two URLs name one storage however they are spelled, and
// [Display] gives a URL fit for output, without a password. Errors about
// the URL itself wrap [ErrBadURL] and never repeat a password.
package storeurl
