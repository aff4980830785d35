package assistant

import (
	"encoding/json"

	"github.com/mombot/mombot/conversation"
)

// Every stop_reason the Messages API documents is handled here, in one
// place (https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons):
//
//   - "end_turn", "stop_sequence": the answer is complete. The assistant
//     sets no stop sequences, but one would end a complete answer too.
//   - "tool_use": the response ends with complete tool calls, which are
//     run.
//   - "max_tokens": the output limit cut the response off; its last block
//     is incomplete. A tool_use in it is never run: a call cut off at
//     "items":["milk","eggs","br"] would put "br" on the grocery list. See
//     [turn.cutOff] for what the person gets.
//   - "model_context_window_exceeded": the context window cut the
//     response off; it is handled like "max_tokens", except that the
//     model is not asked again, since the next request would be longer
//     still.
//   - "pause_turn": the API paused a long server-side tool loop; the
//     response is sent back as the final assistant message, as it is, and
//     the API continues the turn (https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools).
//     At most maxPauses continuations are asked for per message.
//   - "refusal": the model declined. Its partial text is not sent, the
//     exchange is not stored (the API's documentation says the context
//     must be reset, or the refusals continue:
//     https://platform.claude.com/docs/en/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals),
//     and the person gets a kind sentence with stop_details.explanation
//     when there is one. The message is tried once on the fallback model,
//     if one is configured.
//   - anything else (a value added after this code was written, or none):
//     the text is sent as it is, since it is all there is, but no tool it
//     calls is run, since nothing says the call is complete; the log warns.

// stop is what the loop does with a response, by its stop_reason.
type stop int

const (
	stopAnswer  stop = iota // complete: run its tools, if any, or answer
	stopCutOff              // cut off by max_tokens or the context window
	stopPause               // pause_turn: continue it
	stopRefusal             // refusal: drop the exchange
	stopUnknown             // undocumented: answer with the text, run nothing
)

// maxPauses bounds the pause_turn continuations of one message. The API
// pauses a server-side loop after about ten tool iterations, so this lets a
// message run some 50; the message's deadline bounds it in time too.
const maxPauses = 5

// maxCutOffRetries is how many times one message lets the model redo tool
// calls that max_tokens cut off.
const maxCutOffRetries = 1

// stopOf returns what to do with a response whose stop_reason is reason.
func stopOf(reason string) stop {
	switch reason {
	case "end_turn", "stop_sequence", "tool_use":
		return stopAnswer
	case "max_tokens", "model_context_window_exceeded":
		return stopCutOff
	case "pause_turn":
		return stopPause
	case "refusal":
		return stopRefusal
	}
	return stopUnknown
}

// notRunCutOff is the tool_result of a call from a response cut off by
// max_tokens: the model reads it and may call again, with less.
const notRunCutOff = "Not run: your response was cut off by the output limit (max_tokens) before this call was complete. Call it again, complete, with a shorter input if you can."

// notRunUnknown is the tool_result of a call from a response whose
// stop_reason this version does not know.
const notRunUnknown = "Not run: the response ended for a reason this assistant does not know, so the call may be incomplete."

// mergeContent returns the blocks of a and then b as one content array:
// the content of a paused turn and of its continuation, as one assistant
// message, which is what the API would have answered without the pause.
func mergeContent(a, b json.RawMessage) json.RawMessage {
	switch {
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	var x, y []json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return b // assistantContent checked both; not reached
	}
	return conversation.NewMessage(conversation.RoleAssistant, append(x, y...)...).Content
}

// withoutUnansweredServerTools returns msgs without the server tool calls
// (tools the API runs itself, whose results it puts in the assistant
// content after the call, paired by tool_use_id:
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools)
// that no result in msgs answers, and how many it dropped. An assistant
// message left empty is dropped. A paused turn that ran out of
// continuations, or failed, can end so, and must not be stored with a call
// that nothing answers. msgs is not modified.
func withoutUnansweredServerTools(msgs []conversation.Message) ([]conversation.Message, int) {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role != conversation.RoleAssistant {
			continue
		}
		blocks, _ := m.Blocks()
		for _, b := range blocks {
			if conversation.IsServerToolResult(b.Type) {
				answered[b.ToolUseID] = true
			}
		}
	}
	out := make([]conversation.Message, 0, len(msgs))
	dropped := 0
	for _, m := range msgs {
		var raws []json.RawMessage
		if m.Role != conversation.RoleAssistant || json.Unmarshal(m.Content, &raws) != nil {
			out = append(out, m)
			continue
		}
		kept := raws[:0:0]
		for _, raw := range raws {
			if b, err := conversation.ParseBlock(raw); err == nil && conversation.IsServerToolUse(b.Type) && !answered[b.ID] {
				dropped++
				continue
			}
			kept = append(kept, raw)
		}
		switch {
		case len(kept) == len(raws):
			out = append(out, m)
		case len(kept) > 0:
			out = append(out, conversation.NewMessage(conversation.RoleAssistant, kept...))
		}
	}
	return out, dropped
}
