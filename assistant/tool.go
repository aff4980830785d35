package assistant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"unicode/utf8"
)

// Tool is something the assistant can do for a person, such as adding items
// to a shared list. The model decides when to call it from its name,
// description and input schema.
//
// Run may be called by many goroutines at once, for different people. The
// text it returns, or the error's text, is what the model reads; an error
// becomes a tool_result with is_error set and the conversation goes on, so
// the message should tell the model what was wrong ("no list named
// 'grocery'"). Run must honour ctx. A panic in Run is recovered and treated
// like an error.
type Tool interface {
	// Name is the tool's name, unique in a registry: 1 to 64 letters,
	// digits, '_' or '-'.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// InputSchema is the JSON Schema of the tool's input, an object schema.
	InputSchema() json.RawMessage
	// Run runs the tool for call and returns its result as text.
	Run(ctx context.Context, call Call) (string, error)
}

// Call is one invocation of a tool.
type Call struct {
	// Phone is the sender's phone, for tools that keep per-person data.
	// Tools must not log it unmasked.
	Phone string
	// Person is the sender as configured in Options.Family, with their
	// time zone filled in. Name is empty for senders outside the family
	// (strangers and the system sender), never a masked number.
	Person Person
	// Input is the input the model gave, a JSON object.
	Input json.RawMessage
	// ToolUseID is the id of the model's tool_use block.
	ToolUseID string

	turn *turn // the turn the call is part of, for the note tools
}

// DecodeInput decodes call's input into v, rejecting fields v does not
// have, with an error the model can act on.
func (c Call) DecodeInput(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %v", err)
	}
	return nil
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Registry is the set of tools an [Assistant] offers, in the order they were
// added. It is built before the assistant and not changed after, because the
// tool definitions are the start of every request and must stay the same
// bytes for the prompt cache to serve them.
type Registry struct {
	tools  []Tool
	byName map[string]Tool
}

// NewRegistry returns a registry of tools. It fails if a name is invalid or
// used twice, or a schema is not a JSON object with "type": "object".
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{byName: map[string]Tool{}}
	for _, t := range tools {
		if err := r.add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Registry) add(t Tool) error {
	name := t.Name()
	if !toolNameRE.MatchString(name) {
		return fmt.Errorf("assistant: tool name %q must be 1 to 64 letters, digits, '_' or '-'", name)
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("assistant: tool %q registered twice", name)
	}
	if strings.TrimSpace(t.Description()) == "" {
		return fmt.Errorf("assistant: tool %q has no description", name)
	}
	var schema struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(t.InputSchema(), &schema); err != nil || schema.Type != "object" {
		return fmt.Errorf("assistant: tool %q: input schema must be a JSON object schema with \"type\": \"object\"", name)
	}
	r.tools = append(r.tools, t)
	r.byName[name] = t
	return nil
}

// Tools returns the registered tools in order.
func (r *Registry) Tools() []Tool {
	if r == nil {
		return nil
	}
	return append([]Tool(nil), r.tools...)
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	if r == nil {
		return nil, false
	}
	t, ok := r.byName[name]
	return t, ok
}

// Bounds of one tool call, so that one message's tool rounds cannot fill
// the context window of its later requests or the stored conversation.
// MaxToolInput bounds the input the model gives a tool, as JSON: a larger
// call is not run, the model is told to split it, and the call is kept
// with the input {} (see assistantContent). A real model's input is
// bounded by max_tokens anyway (4096 tokens, some 16 KB of JSON, by
// default). MaxToolResult bounds the text a tool returns (or its error):
// a longer one is cut, marked "[result truncated]".
const (
	MaxToolInput  = 16 << 10
	MaxToolResult = 32 << 10
)

// errPanic marks a recovered panic in a tool.
var errPanic = errors.New("the tool failed unexpectedly")

// run runs the tool named by use and returns its result text and whether it
// is an error. It never panics.
func (r *Registry) run(ctx context.Context, use toolUse, call Call) (out string, isErr bool, err error) {
	t, ok := r.Lookup(use.Name)
	if !ok {
		return fmt.Sprintf("There is no tool named %q.", use.Name), true, fmt.Errorf("unknown tool %q", use.Name)
	}
	if len(use.Input) > MaxToolInput {
		return fmt.Sprintf("Not run: the input was %d bytes, over the limit of %d bytes for one tool call. Split it into smaller calls.", len(use.Input), MaxToolInput),
			true, fmt.Errorf("tool %q: input of %d bytes is over the limit of %d", use.Name, len(use.Input), MaxToolInput)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(use.Input, &obj) != nil || obj == nil {
		return "The input must be a JSON object.", true, fmt.Errorf("tool %q: input is not a JSON object", use.Name)
	}
	call.Input, call.ToolUseID = use.Input, use.ID
	defer func() {
		if p := recover(); p != nil {
			out, isErr = errPanic.Error(), true
			err = fmt.Errorf("tool %q: %w: %v\n%s", use.Name, errPanic, p, debug.Stack())
		}
	}()
	res, runErr := t.Run(ctx, call)
	if runErr != nil {
		return clip(runErr.Error()), true, fmt.Errorf("tool %q: %w", use.Name, runErr)
	}
	return clip(res), false, nil
}

// clip makes s a valid, non-empty, bounded tool result text.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.TrimSpace(s) == "" {
		return "(no output)"
	}
	if len(s) > MaxToolResult {
		cut := MaxToolResult
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "\n[result truncated]"
	}
	return s
}
