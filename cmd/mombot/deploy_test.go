package main

// The container files at the repository's root, checked for what
// docs/deploying.md promises of them; no container engine is needed (the
// image itself is built and run by .ci/image where podman can).

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	cmd  string // upper case: FROM, COPY, ...
	args string
}

// dockerStages parses a Dockerfile into its stages' instructions.
func dockerStages(t *testing.T, path string) [][]dockerInstr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages [][]dockerInstr
	var cur string
	sc := bufio.NewScanner(f)
	flush := func() {
		line := strings.TrimSpace(cur)
		cur = ""
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := dockerInstr{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")}
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %s before the first FROM", path, in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cur += line
		flush()
	}
	flush()
	return stages
}

func instrs(stage []dockerInstr, cmd string) []string {
	var out []string
	for _, in := range stage {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func TestDockerfile(t *testing.T) {
	root := filepath.Join("..", "..")
	stages := dockerStages(t, filepath.Join(root, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("the Dockerfile has %d stages, want a build stage and a runtime stage", len(stages))
	}
	build, runtime := stages[0], stages[len(stages)-1]
	if !slices.ContainsFunc(instrs(build, "RUN"), func(s string) bool {
		return strings.Contains(s, "CGO_ENABLED=0 go build") && strings.Contains(s, "./cmd/mombot")
	}) {
		t.Error("the build stage does not build ./cmd/mombot with CGO_ENABLED=0 (a static binary)")
	}
	if got := instrs(runtime, "FROM"); len(got) != 1 || got[0] != "scratch" {
		t.Errorf("the runtime stage is FROM %v, want scratch: the binary and its CA certificates, nothing else", got)
	}
	if got := instrs(runtime, "RUN"); len(got) > 0 {
		t.Errorf("the runtime stage runs %v: FROM scratch has no shell", got)
	}
	var dests []string
	for _, c := range instrs(runtime, "COPY") {
		f := strings.Fields(c)
		dests = append(dests, f[len(f)-1])
	}
	for _, want := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/passwd", "/usr/local/bin/mombot", "/app"} {
		if !slices.Contains(dests, want) {
			t.Errorf("the runtime stage does not copy %s (copies %v)", want, dests)
		}
	}
	if got := instrs(runtime, "USER"); len(got) != 1 || strings.HasPrefix(got[0], "0") || strings.HasPrefix(got[0], "root") {
		t.Errorf("the runtime stage's USER is %v, want one non-root user", got)
	}
	if got := instrs(runtime, "VOLUME"); len(got) != 1 || !strings.Contains(got[0], `"/app/data"`) {
		t.Errorf("the runtime stage's VOLUME is %v, want /app/data", got)
	}
	if got := instrs(runtime, "HEALTHCHECK"); len(got) != 1 || !strings.Contains(got[0], `CMD ["/usr/local/bin/mombot", "healthcheck"]`) {
		t.Errorf("the runtime stage's HEALTHCHECK is %v, want mombot healthcheck", got)
	}
	if got := instrs(runtime, "ENTRYPOINT"); len(got) != 1 || got[0] != `["/usr/local/bin/mombot"]` {
		t.Errorf("the ENTRYPOINT is %v, want the binary", got)
	}

	// .ci/image builds the same runtime stage from a binary built on the
	// host: the two must not drift apart.
	script, err := os.ReadFile(filepath.Join(root, ".ci", "image"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"USER", "WORKDIR", "VOLUME", "ENV", "EXPOSE", "ENTRYPOINT", "CMD"} {
		for _, args := range instrs(runtime, cmd) {
			if line := cmd + " " + args; !strings.Contains(string(script), "\n"+line+"\n") {
				t.Errorf(".ci/image's runtime stage lacks the Dockerfile's %q", line)
			}
		}
	}
}

func TestCompose(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Build       any      `yaml:"build"`
		Image       string   `yaml:"image"`
		Restart     string   `yaml:"restart"`
		EnvFile     []string `yaml:"env_file"`
		Environment map[string]string
		Volumes     []string `yaml:"volumes"`
		Profiles    []string `yaml:"profiles"`
		Command     []string `yaml:"command"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	}
	var c struct {
		Services map[string]service `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	m, ok := c.Services["mombot"]
	if !ok {
		t.Fatal("compose.yaml has no mombot service")
	}
	if m.Build == nil {
		t.Error("the mombot service does not build the Dockerfile")
	}
	if m.Restart != "unless-stopped" {
		t.Errorf("mombot restart: %q, want unless-stopped", m.Restart)
	}
	if len(m.EnvFile) == 0 {
		t.Error("mombot takes its secrets from no env_file")
	}
	if !slices.Contains(m.Volumes, "./data:/app/data") {
		t.Errorf("mombot volumes %v lack ./data:/app/data", m.Volumes)
	}
	// The configuration routes secrets: outside the data folder, which the
	// process writes, and read-only (docs/configuration.md).
	if !slices.Contains(m.Volumes, "./mombot.json:/app/mombot.json:ro") {
		t.Errorf("mombot volumes %v lack ./mombot.json:/app/mombot.json:ro", m.Volumes)
	}
	if len(m.Profiles) > 0 {
		t.Errorf("mombot is in profiles %v: it must start by default", m.Profiles)
	}
	if got := strings.Join(m.Healthcheck.Test, " "); got != "CMD /usr/local/bin/mombot healthcheck" {
		t.Errorf("mombot healthcheck: %q, want mombot healthcheck", got)
	}
	for k := range m.Environment {
		if strings.Contains(k, "KEY") || strings.Contains(k, "TOKEN") || strings.Contains(k, "SECRET") {
			t.Errorf("compose.yaml sets %s itself: secrets belong in the env_file", k)
		}
	}
	r, ok := c.Services["redis"]
	if !ok {
		t.Fatal("compose.yaml has no redis service")
	}
	if !slices.Contains(r.Profiles, "redis") {
		t.Errorf("redis profiles %v: Redis is optional, in the redis profile", r.Profiles)
	}
	if i := slices.Index(r.Command, "--appendonly"); i < 0 || i+1 >= len(r.Command) || r.Command[i+1] != "yes" {
		t.Errorf("redis command %v: append-only persistence is not on", r.Command)
	}
	if i := slices.Index(r.Command, "--appendfsync"); i < 0 || i+1 >= len(r.Command) || r.Command[i+1] != "always" {
		t.Errorf("redis command %v: the append-only file is not synced at every write (--appendfsync always)", r.Command)
	}
	if len(r.Volumes) == 0 {
		t.Error("redis keeps its append-only file in no volume")
	}
	p, ok := c.Services["postgres"]
	if !ok {
		t.Fatal("compose.yaml has no postgres service")
	}
	if !slices.Contains(p.Profiles, "postgres") {
		t.Errorf("postgres profiles %v: PostgreSQL is optional, in the postgres profile", p.Profiles)
	}
	if len(p.Volumes) == 0 {
		t.Error("postgres keeps its data in no volume")
	}
	if pw := p.Environment["POSTGRES_PASSWORD"]; !strings.HasPrefix(pw, "${") {
		t.Errorf("compose.yaml sets POSTGRES_PASSWORD to %q itself: it belongs in .env", pw)
	}
}
