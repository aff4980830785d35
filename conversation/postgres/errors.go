package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mombot/mombot/conversation"
)

// ErrUnreachable is wrapped by the errors of a call that could not reach
// the server: a refused, reset or dropped connection, a name that does not
// resolve, a connection attempt that timed out or a TLS handshake that
// failed. The error names the server's host and port, never the password.
var ErrUnreachable = errors.New("PostgreSQL cannot be reached")

// SQLSTATE codes the store translates
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	codeUniqueViolation = "23505" // unique_violation
	codeReadOnly        = "25006" // read_only_sql_transaction
	codeUndefinedTable  = "42P01" // undefined_table
	codeInvalidSchema   = "3F000" // invalid_schema_name
)

// plainError says in words what a driver error means for the person who runs
// mombot, and keeps the driver's error (with its SQLSTATE) for logs and
// errors.As.
type plainError struct {
	plain  error  // a sentinel: ErrUnreachable, conversation.ErrReadOnly, ...
	advice string // what to do about it
	err    error  // the driver's
}

func (e *plainError) Error() string {
	return fmt.Sprintf("%v: %s (%v)", e.plain, e.advice, e.err)
}

func (e *plainError) Unwrap() []error { return []error{e.plain, e.err} }

// translate turns the driver's errors into the store's: a unique violation
// into conversation.ErrConflict, a write refused by a read-only session
// into conversation.ErrReadOnly, a server that cannot be reached into
// ErrUnreachable, a missing table into ErrNoSchema; others it returns as
// they are. The server's messages name no values, so no phone number; the
// details that may (a unique violation's) are left in the driver's error
// for whoever looks for them with errors.As.
func (s *Store) translate(err error) error {
	var pgErr *pgconn.PgError
	var done *plainError
	switch {
	case err == nil, errors.As(err, &done):
		return err
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case codeUniqueViolation:
			return &plainError{conversation.ErrConflict, "another writer stored the record first", err}
		case codeReadOnly:
			return &plainError{conversation.ErrReadOnly, "the session is read-only: the store was opened read-only, or the server is a standby (point the URL at the primary)", err}
		case codeUndefinedTable, codeInvalidSchema:
			return &plainError{ErrNoSchema, fmt.Sprintf("schema %q lost its tables since the store opened; a writer that opens it sets them up again", s.schema), err}
		}
	case unreachable(err):
		return &plainError{ErrUnreachable, fmt.Sprintf("check that PostgreSQL runs at %s and that the URL's host, port and sslmode fit it", s.server), err}
	}
	return err
}

// unreachable reports whether err means that the server could not be
// reached, as opposed to an answer from it or the caller giving up.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false // the server answered: a wrong password, no such database, ...
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's deadline, not the server's absence
	}
	var nerr net.Error
	return errors.As(err, &nerr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// server returns the host and port a pool connects to, for messages.
func server(cfg *pgxpool.Config) string {
	return net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
}

// kvPassword finds the password of a key=value connection string.
var kvPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// queryPassword finds the password of a URL's query.
var queryPassword = regexp.MustCompile(`[?&]password=([^&#]*)`)

// Redact returns a connection string without its password, for messages: a
// postgres:// or postgresql:// URL with the password of its user and of its
// ?password= shown as xxxxx, a key=value string with password=xxxxx.
func Redact(conn string) string {
	if !isURL(conn) {
		return kvPassword.ReplaceAllString(conn, "${1}xxxxx")
	}
	u, err := neturl.Parse(conn)
	if err != nil {
		// Not a URL to net/url (a port that is no number, say): the
		// password is what comes between the user's colon and the last @.
		if pw := rawPassword(conn); pw != "" {
			conn = strings.Replace(conn, ":"+pw+"@", ":xxxxx@", 1)
		}
		return kvPassword.ReplaceAllString(conn, "${1}xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

func isURL(conn string) bool {
	return strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://")
}

// rawPassword returns the password of a URL's user as written, without
// parsing the rest of the URL.
func rawPassword(conn string) string {
	_, rest, _ := strings.Cut(conn, "://")
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pw, _ := strings.Cut(rest[:at], ":")
	return pw
}

// secrets returns the passwords a connection string holds, in every form
// it may hold them.
func secrets(conn string) []string {
	var out []string
	if isURL(conn) {
		if pw := rawPassword(conn); pw != "" {
			out = append(out, pw)
			if un, err := neturl.PathUnescape(pw); err == nil {
				out = append(out, un)
			}
		}
		for _, m := range queryPassword.FindAllStringSubmatch(conn, -1) {
			out = append(out, m[1])
			if un, err := neturl.QueryUnescape(m[1]); err == nil {
				out = append(out, un)
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(conn, -1) {
		out = append(out, m[2], strings.Trim(m[2], "'"))
		if un, err := neturl.QueryUnescape(m[2]); err == nil {
			out = append(out, un)
		}
	}
	return out
}

// parseError returns pgx's error about a connection string that does not
// parse with every form of the password taken out. pgx masks passwords
// itself, but only as far as it can tell where one is, and its error keeps
// the whole string in a field; this error holds the text alone.
func parseError(conn string, err error) error {
	msg := err.Error()
	for _, pw := range secrets(conn) {
		switch {
		case pw == "":
			continue
		case len(pw) < 4:
			// Masking it would garble the rest of the text.
			return errors.New("the connection string does not parse (not shown: it holds a password)")
		}
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return errors.New(msg)
}
