package main

// The stores of the fault test (serve_faults_test.go): a redis-server or a
// PostgreSQL cluster of the test's own, on a free port, which the test may
// kill -9 and start again on the same data, or hang (SIGSTOP) and wake
// (SIGCONT). Each runs in a process group of its own, so that a signal
// reaches the postmaster and its backends together.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// faultStore is a store server the test owns.
type faultStore interface {
	// url is the --store URL of the replicas.
	url() string
	// kill kills the server's process group with SIGKILL and waits for it.
	kill()
	// start starts the server on its port and data, and waits until it
	// answers.
	start()
	// hang stops (true) or continues (false) the server's process group:
	// its connections stay open and nothing answers meanwhile.
	hang(stop bool)
}

// groupProc is a server process in a process group of its own.
type groupProc struct {
	t    testing.TB
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startGroup starts cmd in a new process group.
func startGroup(t testing.TB, name string, cmd *exec.Cmd, logFile string) *groupProc {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("%s: %v", name, err)
	}
	g := &groupProc{t: t, name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		out.Close()
		close(g.done)
	}()
	return g
}

// signal signals the process group and every descendant of its leader:
// PostgreSQL's backends make process groups of their own.
func (g *groupProc) signal(sig syscall.Signal) {
	if g == nil {
		return
	}
	if err := syscall.Kill(-g.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		g.t.Errorf("%s: signal %v: %v", g.name, sig, err)
	}
	for _, pid := range descendants(g.cmd.Process.Pid) {
		syscall.Kill(pid, sig) // one that exited meanwhile is gone already
	}
}

// descendants returns the processes descending from pid, parents before
// their children, as /proc shows them now.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...", where comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if parent, err := strconv.Atoi(fields[1]); err == nil {
			children[parent] = append(children[parent], child)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

// kill kills the process group and waits for its leader.
func (g *groupProc) kill() {
	if g == nil {
		return
	}
	g.signal(syscall.SIGKILL)
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		g.t.Errorf("%s did not die within 10s of SIGKILL", g.name)
	}
}

// skipOrFailInCI skips the test saying why, or fails it under CI
// (MOMBOT_CI=1), where the fault test must run.
func skipOrFailInCI(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("MOMBOT_CI") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// freePort returns a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// faultRedis is a redis-server that syncs every write (appendfsync always).
type faultRedis struct {
	t    testing.TB
	port int
	dir  string
	proc *groupProc
}

// newFaultRedis starts a redis-server of the test's own, or skips.
func newFaultRedis(t testing.TB) *faultRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		skipOrFailInCI(t, "redis-server is not on PATH: the fault test needs a Redis of its own to kill")
	}
	r := &faultRedis{t: t, port: freePort(t), dir: t.TempDir()}
	r.start()
	t.Cleanup(func() { r.proc.kill() })
	return r
}

func (r *faultRedis) url() string {
	return fmt.Sprintf("redis://127.0.0.1:%d/0?prefix=mombot-faults:", r.port)
}

func (r *faultRedis) start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", r.dir)
	r.proc = startGroup(r.t, "redis-server", cmd, filepath.Join(r.dir, "redis.log"))
	waitPort(r.t, r.port, r.proc, filepath.Join(r.dir, "redis.log"))
}

func (r *faultRedis) kill() { r.proc.kill() }

func (r *faultRedis) hang(stop bool) {
	if stop {
		r.proc.signal(syscall.SIGSTOP)
	} else {
		r.proc.signal(syscall.SIGCONT)
	}
}

// waitPort waits until port accepts connections, or fails the test with
// the server's log.
func waitPort(t testing.TB, port int, g *groupProc, logFile string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-g.done:
			log, _ := os.ReadFile(logFile)
			t.Fatalf("%s exited while starting:\n%s", g.name, log)
		default:
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, _ := os.ReadFile(logFile)
	t.Fatalf("%s did not listen on port %d:\n%s", g.name, port, log)
}

// faultPostgres is a PostgreSQL cluster of the test's own, with the
// server's defaults (fsync on, synchronous commit).
type faultPostgres struct {
	t    testing.TB
	port int
	dir  string // the cluster's data; also its socket folder
	bin  string // the folder of initdb and postgres
	// asPostgres runs the server as the postgres user, which it must be
	// when the test runs as root (PostgreSQL refuses root).
	asPostgres bool
	proc       *groupProc
}

// newFaultPostgres creates and starts a PostgreSQL cluster of the test's
// own, or skips when initdb and postgres are not installed.
func newFaultPostgres(t testing.TB) *faultPostgres {
	t.Helper()
	p := &faultPostgres{t: t, port: freePort(t), asPostgres: os.Geteuid() == 0}
	p.bin = postgresBin()
	if p.bin == "" {
		skipOrFailInCI(t, "initdb and postgres are not installed (on PATH or in /usr/lib/postgresql/*/bin): the fault test needs a PostgreSQL of its own to kill")
	}
	// t.TempDir is private to root; the postgres user must own the data.
	dir, err := os.MkdirTemp("", "mombot-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p.dir = filepath.Join(dir, "data")
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if p.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			skipOrFailInCI(t, "running as root without a postgres user to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(p.dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	initdb := p.command(filepath.Join(p.bin, "initdb"), "-D", p.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.start()
	t.Cleanup(func() { p.proc.kill() })
	return p
}

// postgresBin returns the folder of PostgreSQL's initdb and postgres, or
// "" when they are not found.
func postgresBin() string {
	if path, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(path)
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// command is a command run as the postgres user when need be.
func (p *faultPostgres) command(name string, args ...string) *exec.Cmd {
	if p.asPostgres {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func (p *faultPostgres) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

func (p *faultPostgres) start() {
	p.t.Helper()
	cmd := p.command(filepath.Join(p.bin, "postgres"), "-D", p.dir, "-p", strconv.Itoa(p.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+p.dir, "-c", "max_connections=200")
	logFile := filepath.Join(filepath.Dir(p.dir), "postgres.log")
	p.proc = startGroup(p.t, "postgres", cmd, logFile)
	waitPort(p.t, p.port, p.proc, logFile)
	// The port opens before recovery ends: wait for a query to work.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, p.url())
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logFile)
			p.t.Fatalf("postgres does not answer: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *faultPostgres) kill() { p.proc.kill() }

func (p *faultPostgres) hang(stop bool) {
	if stop {
		p.proc.signal(syscall.SIGSTOP)
	} else {
		p.proc.signal(syscall.SIGCONT)
	}
}
