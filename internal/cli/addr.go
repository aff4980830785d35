package cli

import (
	"errors"
	"net"
	"strings"
)

// CheckListen checks addr, the value of the flag named flag (such as
// "--listen"), as an address to listen on: HOST:PORT, where an empty host
// means every interface. A mistake is a one-line UsageError that says how
// to write it; a port alone, such as 8080, gets the addresses it likely
// means, ":8080" and "127.0.0.1:8080".
func CheckListen(flag, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	switch {
	case err == nil && port != "":
		return nil
	case addr != "" && strings.Trim(addr, "0123456789") == "":
		return Usagef("%s %s: a port alone is not an address; write :%s (every interface) or 127.0.0.1:%s (this machine only)", flag, addr, addr, addr)
	case err == nil:
		return Usagef("%s %q: no port; write HOST:PORT, like :8080", flag, addr)
	}
	reason := err.Error()
	if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
		reason = ae.Err
	}
	return Usagef("%s %q: %s; write HOST:PORT, like :8080 or 127.0.0.1:8080", flag, addr, reason)
}
