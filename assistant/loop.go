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
	"github.com/mombot/mombot/apology"
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
	// storedUser, if set, is stored in place of msgs[0]: a document's
	// placeholder instead of the file.
	storedUser *conversation.Message

	rounds  int
	usage   Usage
	stored  bool
	outcome string
	model   string // the model of the last response

	onFallback bool // the rest of the message runs on the fallback model
	paused     bool // the last message is a paused turn's content, to continue
	pauses     int  // pause_turn continuations asked for
	cutOffs    int  // cut-off tool calls the model was asked to redo

	// The request window and its breakpoint (window.go).
	win                       *window // the window history was taken from
	mark                      string  // the lifetime of the history's breakpoint
	marked                    bool    // mark was chosen
	shrunk                    bool    // the window was shrunk for a prompt too long
	learnt                    bool    // the first call's usage was looked at
	promptTokens, promptBytes int64   // the size of the last request

	// The long-term memory shown (notes.go): nil for none.
	shown     *conversation.Shown
	gone      []conversation.Note // notes forgotten during the turn
	forgotten bool                // the turn held one of them and is stored forgotten
}

// toolUse is a tool_use block of a response.
type toolUse struct {
	ID, Name string
	Input    json.RawMessage
}

// run calls the API until it answers without calling a tool, running the
// tools it calls in between, and saves the turn. What each stop_reason
// leads to is described in stop.go.
func (t *turn) run(ctx context.Context) (Reply, error) {
	for {
		resp, err := t.send(ctx)
		if err != nil {
			err = t.sendError(ctx, err)
			if t.fallBack(ctx, err) {
				continue
			}
			return t.failed(ctx, err)
		}
		t.usage.add(resp.usage)
		t.model = resp.model
		content, uses, err := assistantContent(resp.content)
		if err != nil {
			return t.failed(ctx, fmt.Errorf("response %s: %w", resp.requestID, err))
		}
		if t.paused {
			// The continuation of a paused turn completes the assistant
			// message that was sent back, rather than following it.
			t.paused = false
			content = mergeContent(t.msgs[len(t.msgs)-1].Content, content)
			t.msgs = t.msgs[:len(t.msgs)-1]
		}

		switch stopOf(resp.stopReason) {
		case stopRefusal:
			refusal := &apology.RefusalError{Category: resp.stop.Category, Explanation: resp.stop.Explanation}
			t.log.Warn("assistant: the model declined; the exchange is not stored and will not be sent again",
				"model", resp.model, "category", refusal.Category, "request_id", resp.requestID,
				"tool_rounds_dropped", t.rounds)
			if t.fallBack(ctx, refusal) {
				// The refused response is dropped; the fallback model
				// answers from where the turn was, so that no tool runs
				// twice.
				continue
			}
			t.outcome = "refusal"
			return Reply{Text: ErrorMessage(refusal)}, fmt.Errorf("assistant: handle: %w", refusal)

		case stopPause:
			if content != nil {
				t.msgs = append(t.msgs, conversation.Message{Role: conversation.RoleAssistant, Content: content})
				t.paused = true
			}
			if t.pauses < maxPauses {
				t.pauses++
				continue
			}
			t.log.Warn("assistant: the turn was paused more often than allowed; answering with what there is", "pauses", t.pauses)
			t.outcome = "pause_limit"
			return t.finish(ctx, t.answer(t.lastContent()))

		case stopCutOff:
			return t.cutOff(ctx, resp, content, uses)

		case stopUnknown:
			t.log.Warn("assistant: unknown stop_reason; answering with the text, running no tool",
				"stop_reason", resp.stopReason, "request_id", resp.requestID)
			t.appendAssistant(content)
			if len(uses) > 0 {
				t.msgs = append(t.msgs, toolResults(uses, notRun(notRunUnknown)))
			}
			t.outcome = "unknown_stop_reason"
			return t.finish(ctx, t.answer(content))
		}

		t.appendAssistant(content)
		if len(uses) == 0 {
			t.outcome = resp.stopReason
			return t.finish(ctx, t.answer(content))
		}
		if t.rounds == t.a.maxIter {
			// The calls are answered, not run: a turn must not end on an
			// unanswered call, and nobody would hear what they did.
			t.msgs = append(t.msgs, toolResults(uses, notRun(fmt.Sprintf("Not run: the limit of %d tool rounds for one message was reached.", t.a.maxIter))))
			t.outcome = "tool_limit"
			t.log.Warn("assistant: tool round limit reached", "limit", t.a.maxIter)
			return t.finish(ctx, fmt.Sprintf(replyCapFormat, t.a.maxIter))
		}
		t.msgs = append(t.msgs, t.runTools(ctx, uses))
		t.rounds++
	}
}

// cutOff handles a response that max_tokens or the context window cut off
// before it was complete. Its tool calls are never run: each is answered
// "not run", which keeps the stored turn valid, and, the first time and
// for max_tokens only, the model is asked again, since it can redo the
// call with less (it reads why). Otherwise the person gets the text that
// was written, marked as cut short, and can say "go on": the partial
// answer is stored, so the model sees where it stopped. Asking again with
// a larger max_tokens is not done: a reply read on a phone that needs more
// than Options.MaxTokens is better continued on request than waited for.
func (t *turn) cutOff(ctx context.Context, resp response, content json.RawMessage, uses []toolUse) (Reply, error) {
	t.appendAssistant(content)
	t.log.Warn("assistant: the response was cut off", "stop_reason", resp.stopReason,
		"request_id", resp.requestID, "output_tokens", resp.usage.OutputTokens, "tool_calls_not_run", len(uses))
	if len(uses) > 0 {
		t.msgs = append(t.msgs, toolResults(uses, notRun(notRunCutOff)))
		if resp.stopReason == "max_tokens" && t.cutOffs < maxCutOffRetries && t.rounds < t.a.maxIter {
			t.cutOffs++
			t.rounds++
			return t.run(ctx)
		}
		t.outcome = "cut_off"
		err := fmt.Errorf("assistant: handle: %w: %s", apology.ErrCutOff, resp.stopReason)
		if serr := t.save(ctx); serr != nil {
			return Reply{Text: ErrorMessage(err)}, errors.Join(err, serr)
		}
		return Reply{Text: ErrorMessage(err)}, err
	}
	t.outcome = "cut_off"
	text := ""
	if content != nil {
		text = strings.TrimSpace(conversation.Message{Role: conversation.RoleAssistant, Content: content}.Text())
	}
	if text == "" {
		err := fmt.Errorf("assistant: handle: %w: %s", apology.ErrCutOff, resp.stopReason)
		if serr := t.save(ctx); serr != nil {
			return Reply{Text: ErrorMessage(err)}, errors.Join(err, serr)
		}
		return Reply{Text: ErrorMessage(err)}, err
	}
	return t.finish(ctx, text+"\n\n"+apology.CutOffNote)
}

// appendAssistant appends the assistant message with content, unless
// content is nil.
func (t *turn) appendAssistant(content json.RawMessage) {
	if content != nil {
		t.msgs = append(t.msgs, conversation.Message{Role: conversation.RoleAssistant, Content: content})
	}
}

// lastContent returns the content of the turn's last message if it is the
// assistant's, and nil otherwise.
func (t *turn) lastContent() json.RawMessage {
	if last := t.msgs[len(t.msgs)-1]; last.Role == conversation.RoleAssistant {
		return last.Content
	}
	return nil
}

// notRun returns a tool result function that answers every call with
// text, as an error.
func notRun(text string) func(toolUse) (string, bool) {
	return func(toolUse) (string, bool) { return text, true }
}

// api returns the assistant whose model the turn talks to: the primary,
// or the fallback once the turn fell back to it.
func (t *turn) api() *Assistant {
	if t.onFallback {
		return t.a.fallback
	}
	return t.a
}

// sendError returns the error of a failed API call as the apology
// sentinel for its kind, wrapping it: the message's deadline and attempts
// that all timed out are ErrTimeout; a cancellation by the caller is left
// as it is.
func (t *turn) sendError(ctx context.Context, err error) error {
	switch {
	case errors.Is(context.Cause(ctx), errMessageDeadline):
		return fmt.Errorf("%w: %w after %s: %w", apology.ErrTimeout, errMessageDeadline, t.a.msgTimeout, err)
	case ctx.Err() != nil:
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: each attempt timed out after %s: %w", apology.ErrTimeout, t.a.reqTimeout, err)
	}
	return apiError(err)
}

// fallBack reports whether the turn goes on on the fallback model after
// err: only once per message, only with a fallback configured and time
// left, and only for a failure the other model may not share (overloaded,
// 5xx, timeouts) or a refusal.
func (t *turn) fallBack(ctx context.Context, err error) bool {
	if t.a.fallback == nil || t.onFallback || ctx.Err() != nil {
		return false
	}
	if !fallbackWorthy(err) && !errors.Is(err, apology.ErrRefused) {
		return false
	}
	t.onFallback = true
	t.log.Warn("assistant: trying the fallback model", "from", t.a.model, "to", t.a.fallback.model, "reason", err)
	return true
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
	call := Call{Phone: t.in.From, Person: t.person, turn: t}
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
// except what the API refuses in a request and what is not run: text
// blocks with no visible text are dropped, and a tool_use input that is
// not a JSON object, or is over MaxToolInput, is replaced by {} (the call
// itself keeps it, so that it is refused with an error result that says
// why). Content left empty is returned as nil.
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
			// not an object or too large; the block is kept with the
			// input {}, which the API accepts when the turn is sent
			// again, and which does not carry megabytes into every later
			// request.
			uses = append(uses, toolUse{ID: b.ID, Name: b.Name, Input: b.Input})
			if !isObject(b.Input) || len(b.Input) > MaxToolInput {
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
	if t.rounds == 0 {
		err = fmt.Errorf("assistant: handle: %w", err)
		return Reply{Text: ErrorMessage(err)}, err
	}
	err = fmt.Errorf("assistant: handle: %w: %w", apology.ErrPartial, err)
	if serr := t.save(ctx); serr != nil {
		// A tool ran, so something may have changed that the next message
		// will not know of: say so.
		return Reply{Text: ErrorMessage(err) + "\n\n" + ErrorMessage(serr)}, errors.Join(err, serr)
	}
	return Reply{Text: ErrorMessage(err)}, err
}

// finish saves the turn and returns text as the reply.
func (t *turn) finish(ctx context.Context, text string) (Reply, error) {
	if err := t.save(ctx); err != nil {
		// The person still gets the answer, and is told that the next
		// message will not remember it (nor, after a tool round, what
		// changed, such as a list).
		return Reply{Text: text + "\n\n" + ErrorMessage(err)}, err
	}
	return Reply{Text: text}, nil
}

// storable returns the turn's messages as they may be stored: without
// the server tool calls nothing in the turn answers, which a paused turn
// that ran out of continuations, or failed, can leave.
func (t *turn) storable() []conversation.Message {
	msgs, dropped := withoutUnansweredServerTools(t.msgs)
	if t.storedUser != nil && len(msgs) > 0 {
		msgs = append([]conversation.Message{*t.storedUser}, msgs[1:]...)
	}
	if dropped > 0 {
		t.log.Warn("assistant: unanswered server tool calls are not stored", "calls", dropped)
	}
	return msgs
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
	extra := map[string]json.RawMessage{"usage": usage}
	if t.model != "" {
		// Which model answered, next to the usage it cost: the fallback's
		// turns are told apart from the primary's.
		extra["model"] = quote(t.model)
	}
	if rec := t.windowRecord(); rec != nil {
		extra[windowKey] = rec
	}
	if t.in.ID != "" {
		extra[messageIDKey] = quote(t.in.ID)
	}
	turn := conversation.Turn{Messages: t.storable(), Extra: extra}
	if len(t.gone) > 0 && conversation.TurnHolds(turn, t.gone...) {
		// The person had a note written and forgotten in one message.
		turn, t.forgotten = conversation.ForgetTurn(turn), true
	}
	if t.shown != nil {
		err = t.a.mem.SaveShown(ctx, t.in.From, turn, *t.shown)
	} else {
		err = t.a.mem.Save(ctx, t.in.From, turn)
	}
	if err != nil {
		t.log.Error("assistant: save turn", "err", err)
		return fmt.Errorf("assistant: handle: %w: %w", apology.ErrNotSaved, err)
	}
	t.stored = true
	return nil
}
