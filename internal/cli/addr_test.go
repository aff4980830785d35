package cli_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mombot/mombot/internal/cli"
)

func TestCheckListen(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want string // in the error; "" means valid
	}{
		{":8080", ""},
		{"127.0.0.1:8080", ""},
		{"[::1]:0", ""},
		{"localhost:http", ""},
		{"8080", "--listen 8080: a port alone is not an address; write :8080 (every interface) or 127.0.0.1:8080 (this machine only)"},
		{"127.0.0.1", `--listen "127.0.0.1": missing port in address; write HOST:PORT`},
		{"127.0.0.1:", `--listen "127.0.0.1:": no port`},
		{"", `--listen "": missing port in address`},
		{"::1:80", "too many colons"},
	} {
		err := cli.CheckListen("--listen", tt.addr)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckListen(%q) = %v, want nil", tt.addr, err)
			}
			continue
		}
		var u cli.UsageError
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &u) || strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckListen(%q) = %v, want a one-line usage error with %q", tt.addr, err, tt.want)
		}
	}
}
