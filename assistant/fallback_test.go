package assistant_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mombot/mombot/apology"
	"github.com/mombot/mombot/assistant"
	"github.com/mombot/mombot/assistant/anthropictest"
)

const (
	primaryModel  = "claude-sonnet-5-5"
	fallbackModel = "claude-haiku-4-5"
)

func fallbackEnv(t *testing.T, tools ...assistant.Tool) *env {
	return newEnv(t, &assistant.Options{Model: primaryModel, FallbackModel: fallbackModel}, tools...)
}

// models returns the model of every request the fake received.
func models(e *env) []string {
	var out []string
	for _, r := range e.srv.Requests() {
		out = append(out, r.Params.Model)
	}
	return out
}

// storedModel returns the "model" key of phone's last stored turn.
func storedModel(t *testing.T, e *env, phone string) string {
	t.Helper()
	turns := e.turns(phone)
	if len(turns) == 0 {
		t.Fatal("no turn stored")
	}
	var m string
	if err := json.Unmarshal(turns[len(turns)-1].Extra["model"], &m); err != nil {
		t.Fatalf("the stored turn's model: %v", err)
	}
	return m
}

// When the primary model fails for its own sake (529, 5xx, refusal), the
// message is tried once on the fallback model, whose request carries its
// name and the rest unchanged; the reply, the log and the stored turn say
// which model answered.
func TestFallbackModel(t *testing.T) {
	tests := []struct {
		name string
		fail anthropictest.Response
	}{
		{"overloaded", anthropictest.Overloaded()},
		{"server error", anthropictest.InternalError()},
		{"refusal", anthropictest.Refusal("I can", "cyber", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fallbackEnv(t)
			e.srv.Enqueue(tt.fail, anthropictest.Text("Tacos."))
			r := e.mustHandle(erin, "dinner?")
			if r.Text != "Tacos." || r.Model != fallbackModel {
				t.Errorf("reply %q from %q, want Tacos. from %s", r.Text, r.Model, fallbackModel)
			}
			if got := models(e); len(got) != 2 || got[0] != primaryModel || got[1] != fallbackModel {
				t.Fatalf("requests went to %q", got)
			}
			// The same request but for the model.
			reqs := e.srv.Requests()
			if a, b := strings.Replace(string(reqs[0].Body), primaryModel, fallbackModel, 1), string(reqs[1].Body); a != b {
				t.Errorf("the fallback's request differs beyond the model:\n%s\n%s", a, b)
			}
			if m := storedModel(t, e, erin); m != fallbackModel {
				t.Errorf("stored model %q", m)
			}
			if log := e.logs.String(); !strings.Contains(log, "trying the fallback model") || !strings.Contains(log, "model="+fallbackModel) {
				t.Errorf("the log does not name the fallback:\n%s", log)
			}
		})
	}
}

// The fallback is tried once: when it fails too, the person gets the
// sentence for its failure.
func TestFallbackOnce(t *testing.T) {
	e := fallbackEnv(t)
	e.srv.Enqueue(anthropictest.Overloaded(), anthropictest.Overloaded())
	r, err := e.handle(erin, "dinner?")
	if !errors.Is(err, apology.ErrOverloaded) || r.Text != apology.Overloaded {
		t.Errorf("reply %q, err %v", r.Text, err)
	}
	if n := len(e.srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// Failures every model would share (a rate limit, a prompt too long, a bad
// request) are not tried on the fallback.
func TestNoFallbackForSharedFailures(t *testing.T) {
	for _, fail := range []anthropictest.Response{anthropictest.RateLimited(), anthropictest.PromptTooLong(210000, 200000), anthropictest.Fail(http.StatusBadRequest, "invalid_request_error", "bad")} {
		e := fallbackEnv(t)
		e.srv.Enqueue(fail)
		if _, err := e.handle(erin, "dinner?"); err == nil {
			t.Fatal("no error")
		}
		if got := models(e); len(got) != 1 {
			t.Errorf("%s: requests went to %q, want the primary only", fail.Error.Type, got)
		}
	}
}

// Without a fallback model, the primary's model is stored and nothing
// else is tried.
func TestNoFallbackConfigured(t *testing.T) {
	e := newEnv(t, &assistant.Options{Model: primaryModel})
	e.srv.Enqueue(anthropictest.Text("Tacos."))
	r := e.mustHandle(erin, "dinner?")
	if r.Model != primaryModel || storedModel(t, e, erin) != primaryModel {
		t.Errorf("model %q, stored %q", r.Model, storedModel(t, e, erin))
	}
	e.srv.Enqueue(anthropictest.Overloaded())
	if _, err := e.handle(erin, "again?"); !errors.Is(err, apology.ErrOverloaded) || len(e.srv.Requests()) != 2 {
		t.Errorf("err %v after %d requests", err, len(e.srv.Requests()))
	}
}

// A fallback after a tool round goes on from there: the tool is not run
// again.
func TestFallbackAfterToolRound(t *testing.T) {
	var list listTool
	e := fallbackEnv(t, list.tool())
	e.srv.Enqueue(anthropictest.ToolUse("", anthropictest.Call{Name: "list_add", Input: map[string]any{"items": []string{"milk"}}}),
		anthropictest.InternalError(), anthropictest.Text("Milk is on the list."))
	r := e.mustHandle(erin, "add milk")
	if r.Text != "Milk is on the list." || len(list.runs()) != 1 {
		t.Errorf("reply %q, runs %q", r.Text, list.runs())
	}
	if got := models(e); got[2] != fallbackModel || len(sent(t, e.srv.Requests()[2])) != 3 {
		t.Errorf("models %q", got)
	}
	checkStoredValid(t, e, erin)
}
