package conversation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidTurn is returned, wrapped with the reason, when a turn would make
// a history that the Messages API rejects. See [ValidateTurn] for the rules.
var ErrInvalidTurn = errors.New("invalid turn")

// ValidateTurn reports whether msgs is a turn that can be stored: any
// sequence of valid turns, and any suffix of it that starts at a turn, is then
// a message list the Messages API accepts. The rules, each checked with the
// API's own wording where it has one:
//
//   - the turn is not empty and starts with a user message that answers no tool call;
//   - every role is "user" or "assistant", and no content is empty;
//   - no text block is empty or only white space; every block has a type;
//   - a tool_use's input is a JSON object;
//   - a tool_result's content is a string or an array of blocks that follow
//     the same rules (a type each, no empty text, no tool blocks);
//   - every tool_use id of an assistant message is answered by a tool_result
//     with the same id in the very next message, which is a user message whose
//     tool_result blocks come first;
//   - no tool_result answers a call that the previous message did not make;
//   - tool_use ids are unique, and the turn does not end on an unanswered call;
//   - server tool calls (server_tool_use, mcp_tool_use: tools the API runs
//     itself) are in assistant messages, have an id, unique in the turn,
//     and are each answered by one result block of a server tool (such as
//     web_search_tool_result) with that tool_use_id, after the call, in
//     the same assistant message or, when the call was made alongside a
//     client tool_use, in a later assistant message of the turn, since
//     the API runs it once the client's results are sent
//     (https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools);
//     no such result answers anything else, and no call is left
//     unanswered, so a turn paused by the API (stop_reason "pause_turn")
//     can never be stored half done;
//   - the JSON is valid UTF-8.
//
// The error wraps [ErrInvalidTurn] and names the message at fault.
func ValidateTurn(msgs []Message) error {
	_, err := validateTurn(msgs)
	return err
}

// validateTurn is ValidateTurn, returning the turn's tool_use ids when it is
// valid and its messages' content compact.
func validateTurn(msgs []Message) (toolUseIDs []string, err error) {
	return checkTurn(msgs, func(i int) (bool, []Block, error) {
		if !utf8.Valid(msgs[i].Content) {
			return false, nil, nil
		}
		blocks, err := msgs[i].checkedBlocks()
		return true, blocks, err
	})
}

// checkTurn is ValidateTurn with the parse of each message's content left
// to contentOf, which reports whether message i's content is valid UTF-8
// and, if it is, its blocks as [Message.Blocks] returns them; checkTurn
// asks for each message once, in order, once the checks of the messages
// before it have passed. When msgs is a valid turn it returns the ids
// [Turn.ToolUseIDs] gives for it, taken from the same blocks, provided
// every message's content is compact, as a sanitised message's is.
func checkTurn(msgs []Message, contentOf func(i int) (validUTF8 bool, blocks []Block, err error)) (toolUseIDs []string, err error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: a turn needs at least one message", ErrInvalidTurn)
	}
	if msgs[0].Role != RoleUser {
		return nil, fmt.Errorf("%w: messages.0: the first message must use the \"user\" role, not %q", ErrInvalidTurn, msgs[0].Role)
	}
	var seenBuf [8]string
	seen := idSet{list: seenBuf[:0]} // the ids of tool calls so far
	var ids []string
	var pending []string     // tool_use ids the previous message left to answer
	var serverCalls []string // server tool calls not answered yet, in order
	for i, m := range msgs {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: messages.%d: %s", ErrInvalidTurn, i, fmt.Sprintf(format, args...))
		}
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return nil, bad("role must be \"user\" or \"assistant\", not %q", m.Role)
		}
		validUTF8, blocks, err := contentOf(i)
		if !validUTF8 {
			return nil, bad("content is not valid UTF-8")
		}
		if err != nil {
			return nil, bad("content: %v", err)
		}
		if len(blocks) == 0 {
			return nil, bad("all messages must have non-empty content")
		}
		// This message's tool_use ids are the ones it appends to ids:
		// pending takes them as ids[first:], without a list of its own.
		first := len(ids)
		var results []string
		resultsDone := false
		for j, b := range blocks {
			switch b.Type {
			case "":
				return nil, bad("content.%d: block type must not be empty", j)
			case "text":
				if !b.HasText || strings.TrimFunc(b.Text, unicode.IsSpace) == "" {
					if m.IsString() {
						return nil, bad("text content blocks must contain non-whitespace text")
					}
					return nil, bad("content.%d: text content blocks must contain non-whitespace text", j)
				}
			case "tool_use":
				if m.Role != RoleAssistant {
					return nil, bad("content.%d: tool_use blocks are only allowed in assistant messages", j)
				}
				if b.ID == "" || b.Name == "" {
					return nil, bad("content.%d: tool_use needs an id and a name", j)
				}
				if !isObject(b.Input) {
					return nil, bad("content.%d.input: tool_use input must be a JSON object", j)
				}
				if seen.has(b.ID) {
					return nil, bad("content.%d: tool_use ids must be unique: %s", j, b.ID)
				}
				seen = seen.add(b.ID)
				ids = append(ids, b.ID)
			case "tool_result":
				if m.Role != RoleUser {
					return nil, bad("content.%d: tool_result blocks are only allowed in user messages", j)
				}
				if resultsDone {
					return nil, bad("content.%d: tool_result blocks must come before any other content", j)
				}
				if !slices.Contains(pending, b.ToolUseID) || slices.Contains(results, b.ToolUseID) {
					return nil, bad("content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", j, b.ToolUseID)
				}
				if err := checkResultContent(b.Content); err != nil {
					return nil, bad("content.%d.content%s", j, err)
				}
				results = append(results, b.ToolUseID)
			default:
				switch {
				case IsServerToolUse(b.Type):
					if m.Role != RoleAssistant {
						return nil, bad("content.%d: %s blocks are only allowed in assistant messages", j, b.Type)
					}
					if b.ID == "" {
						return nil, bad("content.%d: %s needs an id", j, b.Type)
					}
					if seen.has(b.ID) {
						return nil, bad("content.%d: tool use ids must be unique: %s", j, b.ID)
					}
					seen = seen.add(b.ID)
					serverCalls = append(serverCalls, b.ID)
				case IsServerToolResult(b.Type):
					if m.Role != RoleAssistant {
						return nil, bad("content.%d: %s blocks are only allowed in assistant messages", j, b.Type)
					}
					k := slices.Index(serverCalls, b.ToolUseID)
					if k < 0 {
						return nil, bad("content.%d: %s answers %q, which no server tool call before it in this turn made and left unanswered", j, b.Type, b.ToolUseID)
					}
					serverCalls = slices.Delete(serverCalls, k, k+1)
				}
			}
			if b.Type != "tool_result" {
				resultsDone = true
			}
		}
		if len(pending) > 0 {
			var missing []string
			for _, id := range pending {
				if !slices.Contains(results, id) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return nil, fmt.Errorf("%w: messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message",
					ErrInvalidTurn, i-1, strings.Join(missing, ", "))
			}
		}
		pending = ids[first:]
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("%w: messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. A turn must not end on an unanswered tool call",
			ErrInvalidTurn, len(msgs)-1, strings.Join(pending, ", "))
	}
	if len(serverCalls) > 0 {
		return nil, fmt.Errorf("%w: server tool calls without a result in the turn: %s. A turn must not end on an unanswered server tool call (a turn paused by the API is continued before it is stored)",
			ErrInvalidTurn, strings.Join(serverCalls, ", "))
	}
	return ids, nil
}

// idSet is a set of tool ids: a list while it is short, as a turn's is,
// and a map beyond.
type idSet struct {
	list []string
	m    map[string]bool
}

func (s idSet) has(id string) bool {
	if s.m != nil {
		return s.m[id]
	}
	for _, v := range s.list {
		if v == id {
			return true
		}
	}
	return false
}

func (s idSet) add(id string) idSet {
	if s.m != nil {
		s.m[id] = true
		return s
	}
	s.list = append(s.list, id)
	if len(s.list) > 32 {
		s.m = make(map[string]bool, 2*len(s.list))
		for _, v := range s.list {
			s.m[v] = true
		}
	}
	return s
}

// IsServerToolUse reports whether a content block type is a call of a
// tool the API runs itself: "server_tool_use" or "mcp_tool_use".
func IsServerToolUse(blockType string) bool {
	return blockType == "server_tool_use" || blockType == "mcp_tool_use"
}

// IsServerToolResult reports whether a content block type is the result
// of a tool the API runs itself, such as "web_search_tool_result",
// "code_execution_tool_result" or "mcp_tool_result": a type ending in
// "_tool_result" other than a client's "tool_result".
func IsServerToolResult(blockType string) bool {
	return blockType != "tool_result" && strings.HasSuffix(blockType, "_tool_result")
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// checkResultContent checks the content of a tool_result. Its error text
// continues a path such as "content.0.content".
func checkResultContent(content json.RawMessage) error {
	content = bytes.TrimLeft(content, " \t\r\n")
	if len(content) == 0 || content[0] == '"' || bytes.Equal(content, []byte("null")) {
		return nil
	}
	if content[0] != '[' {
		return errors.New(": tool_result content must be a string or an array of content blocks")
	}
	raws, err := rawBlocks(content)
	if err != nil {
		return fmt.Errorf(": %v", err)
	}
	for k, raw := range raws {
		b, err := ParseBlock(raw) // content is one of a valid message's blocks
		if err != nil {
			return fmt.Errorf(".%d: %v", k, err)
		}
		switch b.Type {
		case "":
			return fmt.Errorf(".%d: block type must not be empty", k)
		case "text":
			if !b.HasText || strings.TrimFunc(b.Text, unicode.IsSpace) == "" {
				return fmt.Errorf(".%d: text content blocks must contain non-whitespace text", k)
			}
		case "tool_use", "tool_result":
			return fmt.Errorf(".%d: %s blocks are not allowed inside a tool_result", k, b.Type)
		}
	}
	return nil
}

// repair returns the turns that pass [ValidateTurn], in order, and how many
// were dropped. A turn that reuses a tool_use id of an earlier kept turn is
// dropped too, since the API wants ids unique across the request. [Memory]
// applies it to what it reads that it did not write, such as a file edited
// by hand or written by the Python original. Because every kept turn is
// valid on its own, the history they make is valid too.
func repair(turns []Turn) (kept []Turn, dropped int) {
	return repairTurns(turns, false)
}

// repairTurns is repair. With compacted set, every message's content is
// compact, and each kept turn is marked checked with its tool_use ids.
func repairTurns(turns []Turn, compacted bool) (kept []Turn, dropped int) {
	kept = turns[:0:0]
	ids := map[string]bool{}
	for _, t := range turns {
		own, err := validateTurn(t.Messages)
		if err != nil || slices.ContainsFunc(own, func(id string) bool { return ids[id] }) {
			dropped++
			continue
		}
		for _, id := range own {
			ids[id] = true
		}
		if compacted {
			t.checked = &checkedTurn{toolUseIDs: own}
		}
		kept = append(kept, t)
	}
	return kept, dropped
}
