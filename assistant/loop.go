package assistant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/mombot/mombot/conversation"
)

// saveTimeout bounds saving a turn after the caller's context has ended,
// so that work already done (tools run, an answer given) is remembered.
const saveTimeout = 10 * time.Second

// turn is the handling of one message: the seed's handle_message loop.
type turn struct {
	a       *Assistant
	in      Inbound
	person  Person // as configured, for the tools
	history []conversation.Message
	msgs    []conversation.Message // this turn's messages, from the user's
	log     *slog.Logger

	rounds  int
	usage   Usage
	stored  bool
	outcome string
}

// toolUse is a tool_use block of a response.
type toolUse struct {
	ID, Name string
	Input    json.RawMessage
}

// run calls the API until it answers without calling a tool, running the
// tools it calls in between, and saves the turn.
func (t *turn) run(ctx context.Context) (Reply, error) {
	for {
		resp, err := t.a.send(ctx, t.history, t.msgs)
		if err != nil {
			return t.failed(ctx, err)
		}
		t.usage.add(resp.usage)
		content, uses, err := assistantContent(resp.content)
		if err != nil {
			return t.failed(ctx, fmt.Errorf("response %s: %w", resp.requestID, err))
		}
		if content != nil {
			t.msgs = append(t.msgs, conversation.Message{Role: conversation.RoleAssistant, Content: content})
		}
		if len(uses) == 0 {
			t.outcome = resp.stopReason
			return t.finish(ctx, t.answer(content))
		}
		if t.rounds == t.a.maxIter {
			// The calls are answered, not run: a turn must not end on an
			// unanswered call, and nobody would hear what they did.
			t.msgs = append(t.msgs, toolResults(uses, func(toolUse) (string, bool) {
				return fmt.Sprintf("Not run: the limit of %d tool rounds for one message was reached.", t.a.maxIter), true
			}))
			t.outcome = "tool_limit"
			t.log.Warn("assistant: tool round limit reached", "limit", t.a.maxIter)
			return t.finish(ctx, fmt.Sprintf(replyCapFormat, t.a.maxIter))
		}
		t.msgs = append(t.msgs, t.runTools(ctx, uses))
		t.rounds++
	}
}

// answer returns the text to send for the final assistant content.
func (t *turn) answer(content json.RawMessage) string {
	if content != nil {
		m := conversation.Message{Role: conversation.RoleAssistant, Content: content}
		if s := strings.TrimSpace(m.Text()); s != "" {
			return s
		}
	}
	if t.rounds > 0 {
		return replyDoneNoAnswer
	}
	return ReplyNoAnswer
}

// runTools runs the calls of one round in order, since one may depend on
// another ("add milk", then "show the list"), and returns the user message
// with their results.
func (t *turn) runTools(ctx context.Context, uses []toolUse) conversation.Message {
	call := Call{Phone: t.in.From, Person: t.person}
	return toolResults(uses, func(u toolUse) (string, bool) {
		out, isErr, err := t.a.tools.run(ctx, u, call)
		switch {
		case errors.Is(err, errPanic):
			t.log.Error("assistant: tool panicked", "tool", u.Name, "err", err)
		case err != nil:
			t.log.Warn("assistant: tool failed", "tool", u.Name, "err", err)
		}
		return out, isErr
	})
}

// toolResults returns the user message answering uses, in order.
func toolResults(uses []toolUse, result func(toolUse) (string, bool)) conversation.Message {
	blocks := make([]json.RawMessage, len(uses))
	for i, u := range uses {
		out, isErr := result(u)
		var b bytes.Buffer
		b.WriteString(`{"type":"tool_result","tool_use_id":`)
		b.Write(quote(u.ID))
		b.WriteString(`,"content":`)
		b.Write(quote(out))
		if isErr {
			b.WriteString(`,"is_error":true`)
		}
		b.WriteByte('}')
		blocks[i] = b.Bytes()
	}
	return conversation.NewMessage(conversation.RoleUser, blocks...)
}

// assistantContent returns the content of a response as it will be sent
// back and stored, and its tool calls. The blocks are kept byte for byte,
// except what the API refuses in a request: text blocks with no visible
// text are dropped, and a tool_use input that is not a JSON object is
// replaced by {} (the call itself keeps it, so that it is refused with an
// error result). Content left empty is returned as nil.
func assistantContent(raw json.RawMessage) (json.RawMessage, []toolUse, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, nil, fmt.Errorf("content is not an array: %w", err)
	}
	kept := blocks[:0:0]
	var uses []toolUse
	changed := false // a block was rewritten
	for i, rb := range blocks {
		b, err := conversation.ParseBlock(rb)
		if err != nil {
			return nil, nil, fmt.Errorf("content block %d: %w", i, err)
		}
		switch b.Type {
		case "text":
			if strings.TrimFunc(b.Text, unicode.IsSpace) == "" {
				continue
			}
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return nil, nil, fmt.Errorf("content block %d: tool_use without id or name", i)
			}
			// The tool gets the input as given, and refuses it if it is
			// not an object; the block is kept with the input {}, which
			// the API accepts when the turn is sent again.
			uses = append(uses, toolUse{ID: b.ID, Name: b.Name, Input: b.Input})
			if !isObject(b.Input) {
				if rb, err = withEmptyInput(rb); err != nil {
					return nil, nil, fmt.Errorf("content block %d: %w", i, err)
				}
				changed = true
			}
		}
		kept = append(kept, rb)
	}
	switch {
	case len(kept) == 0:
		return nil, uses, nil
	case len(kept) == len(blocks) && !changed:
		return raw, uses, nil
	}
	return conversation.NewMessage(conversation.RoleAssistant, kept...).Content, uses, nil
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

// withEmptyInput returns the tool_use block raw with its input replaced by
// {}, its other fields unchanged (the keys sorted).
func withEmptyInput(raw json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	fields["input"] = json.RawMessage(`{}`)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// failed handles a failed API call: after at least one tool round the
// partial turn is saved, since it is valid (it ends with tool results) and
// tells the next message what was already done; before, nothing is.
func (t *turn) failed(ctx context.Context, err error) (Reply, error) {
	attrs := []any{"err", err, "tool_rounds", t.rounds}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		attrs = append(attrs, "status", apiErr.StatusCode, "request_id", apiErr.RequestID, "error_type", string(apiErr.Type()))
	}
	t.log.Error("assistant: messages API call failed", attrs...)
	t.outcome = "api_error"
	err = fmt.Errorf("assistant: handle: %w", err)
	if t.rounds == 0 {
		return Reply{Text: ReplyAPIFailure}, err
	}
	if serr := t.save(ctx); serr != nil {
		return Reply{Text: ReplyAPIPartial}, errors.Join(err, serr)
	}
	return Reply{Text: ReplyAPIPartial}, err
}

// finish saves the turn and returns text as the reply.
func (t *turn) finish(ctx context.Context, text string) (Reply, error) {
	if err := t.save(ctx); err != nil {
		// The person still gets the answer; the next message will not
		// remember it.
		return Reply{Text: text}, err
	}
	return Reply{Text: text}, nil
}

// save stores the turn with its usage, even if ctx has ended. The system
// sender's turns are never stored.
func (t *turn) save(ctx context.Context) error {
	if t.in.From == conversation.SystemSender {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	usage, err := json.Marshal(t.usage)
	if err != nil {
		return fmt.Errorf("assistant: save turn: %w", err)
	}
	turn := conversation.Turn{Messages: t.msgs, Extra: map[string]json.RawMessage{"usage": usage}}
	if err := t.a.mem.Save(ctx, t.in.From, turn); err != nil {
		t.log.Error("assistant: save turn", "err", err)
		return fmt.Errorf("assistant: handle: %w", err)
	}
	t.stored = true
	return nil
}
