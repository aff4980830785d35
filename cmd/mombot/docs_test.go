package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docsToCheck are the pages whose commands a newcomer copies first.
var docsToCheck = []string{"../../README.md", "../../docs/families.md", "../../docs/commands.md"}

// codeSpans returns the code of a Markdown page: each `span`, and each line
// of a fenced block (without its # comment).
func codeSpans(page string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			out = append(out, line)
			continue
		}
		parts := strings.Split(line, "`")
		for i := 1; i < len(parts); i += 2 {
			out = append(out, parts[i])
		}
	}
	return out
}

// invocationRE finds a mombot command in code: the command's word and what
// follows it.
var invocationRE = regexp.MustCompile(`(?:^|[\s(])(?:go run \./cmd/mombot|mombot)\s+([a-z][a-z-]*)(.*)`)

// flagRE finds the long flags named in a command line.
var flagRE = regexp.MustCompile(`(?:^|[\s\[|])--([a-z][a-z-]*)`)

// TestDocsNameRealCommands: every mombot command, sub-command and flag that
// the README and the pages for newcomers name in their code is one that
// mombot help lists, so that what is copied from them runs.
func TestDocsNameRealCommands(t *testing.T) {
	help := map[string]string{} // "history migrate" -> its help
	helpOf := func(words ...string) string {
		t.Helper()
		key := strings.Join(words, " ")
		if h, ok := help[key]; ok {
			return h
		}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"mombot", "help"}, words...), func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("mombot help %s: %v", key, err)
		}
		help[key] = stdout.String()
		return help[key]
	}
	checked := 0
	for _, path := range docsToCheck {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, code := range codeSpans(string(data)) {
			for _, m := range invocationRE.FindAllStringSubmatch(code, -1) {
				cmd, rest := m[1], m[2]
				words := []string{cmd}
				if cmd == "help" {
					if f := strings.Fields(rest); len(f) > 0 && regexp.MustCompile(`^[a-z]+$`).MatchString(f[0]) {
						words, rest = []string{f[0]}, strings.TrimPrefix(strings.TrimSpace(rest), f[0])
					} else {
						continue // mombot help, or mombot help COMMAND
					}
				}
				if _, ok := commands[words[0]]; !ok {
					t.Errorf("%s names the command %q, which mombot does not have: %q", path, words[0], code)
					continue
				}
				if f := strings.Fields(rest); words[0] == "history" && len(f) > 0 && f[0] == "migrate" {
					words = append(words, "migrate")
				}
				usage := helpOf(words...)
				for _, fm := range flagRE.FindAllStringSubmatch(rest, -1) {
					if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(fm[1]) + `\b`).MatchString(usage) {
						t.Errorf("%s names the flag --%s of mombot %s, which it does not have: %q", path, fm[1], strings.Join(words, " "), code)
					}
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d mombot commands found in %v: the test reads the pages wrongly", checked, docsToCheck)
	}
}

// TestReadmeTestCommandIsCIs: the README's command that runs the tests is
// the one .ci/run runs, with the same variables and their values.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	// The README's command, its continuation lines joined.
	joined := strings.ReplaceAll(string(readme), "\\\n", " ")
	var line string
	for _, l := range strings.Split(joined, "\n") {
		if strings.Contains(l, "go test") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			line = strings.Join(strings.Fields(l), " ")
			break
		}
	}
	if line == "" {
		t.Fatal("README.md has no go test command")
	}
	vars := map[string]string{}
	fields := strings.Fields(line)
	for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "-") {
		name, value, _ := strings.Cut(fields[0], "=")
		vars[name] = strings.Trim(value, `'"`)
		fields = fields[1:]
	}
	command := strings.Join(fields, " ")

	ciCommand := ""
	for _, l := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(l, "go test ") {
			ciCommand = strings.Join(strings.Fields(l), " ")
		}
	}
	if command != ciCommand {
		t.Errorf("README.md runs the tests with %q, .ci/run with %q", command, ciCommand)
	}
	// .ci/run: export NAME="${NAME:-DEFAULT}", DEFAULT maybe $var, var="...".
	shellVars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z_]+)="([^"]*)"$`).FindAllStringSubmatch(string(ci), -1) {
		shellVars[m[1]] = m[2]
	}
	ciVars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (MOMBOT_TEST_[A-Z_]+)="\$\{[A-Z_]+:-([^}]*)\}"$`).FindAllStringSubmatch(string(ci), -1) {
		v := m[2]
		if name, ok := strings.CutPrefix(v, "$"); ok {
			v = shellVars[name]
		}
		ciVars[m[1]] = v
	}
	if len(ciVars) == 0 {
		t.Fatal("no MOMBOT_TEST_ variable found in .ci/run: the test reads it wrongly")
	}
	for name, want := range ciVars {
		if got, ok := vars[name]; !ok || got != want {
			t.Errorf("README.md's test command sets %s=%q, .ci/run %q", name, got, want)
		}
	}
	for name := range vars {
		if _, ok := ciVars[name]; !ok {
			t.Errorf("README.md's test command sets %s, which .ci/run does not", name)
		}
	}
}
