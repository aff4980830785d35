package conversation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// separateSteps is what Memory.Save did before its one pass: sanitise each
// message, validate the sanitised turn, then encode it and take its tool
// ids as a store does, each step parsing the turn anew.
func separateSteps(turn Turn) (Turn, []byte, []string, error) {
	extra, err := cleanExtra(turn.Extra, "messages")
	if err != nil {
		return Turn{}, nil, nil, fmt.Errorf("%w: %v", ErrInvalidTurn, err)
	}
	clean := Turn{Messages: make([]Message, len(turn.Messages)), Extra: extra}
	for i, msg := range turn.Messages {
		s, err := Sanitize(msg)
		if err != nil {
			return Turn{}, nil, nil, fmt.Errorf("%w: messages.%d: %v", ErrInvalidTurn, i, err)
		}
		clean.Messages[i] = s
	}
	if err := ValidateTurn(clean.Messages); err != nil {
		return Turn{}, nil, nil, err
	}
	data, err := clean.MarshalJSON()
	if err != nil {
		return Turn{}, nil, nil, err
	}
	return clean, data, clean.ToolUseIDs(), nil
}

// checkOnePass fails unless prepareTurn gives for turn what the separate
// steps give: the same error, or the same sanitised messages, stored bytes
// and tool ids, which the returned turn's MarshalJSON and ToolUseIDs give
// back.
func checkOnePass(t *testing.T, turn Turn) {
	t.Helper()
	wantTurn, wantData, wantIDs, wantErr := separateSteps(turn)
	got, err := prepareTurn(turn)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%s:\none pass err: %v\nsteps err:    %v", dumpTurn(turn), err, wantErr)
	}
	if err != nil {
		return
	}
	data, err := got.MarshalJSON()
	if err != nil || !bytes.Equal(data, wantData) {
		t.Fatalf("%s:\none pass stored %s (%v)\nsteps stored    %s", dumpTurn(turn), data, err, wantData)
	}
	if ids := got.ToolUseIDs(); !slices.Equal(ids, wantIDs) || (ids == nil) != (wantIDs == nil) {
		t.Fatalf("%s: one pass ids %q, steps ids %q", dumpTurn(turn), ids, wantIDs)
	}
	for i := range got.Messages {
		if !got.Messages[i].Equal(wantTurn.Messages[i]) {
			t.Fatalf("%s: message %d is %s, steps give %s", dumpTurn(turn), i, got.Messages[i].Content, wantTurn.Messages[i].Content)
		}
	}
	// Without its stored form, the turn encodes to the same bytes.
	again, err := got.Clone().MarshalJSON()
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("%s: re-encoded %s (%v), stored %s", dumpTurn(turn), again, err, data)
	}
}

func dumpTurn(t Turn) string {
	var b bytes.Buffer
	for _, m := range t.Messages {
		fmt.Fprintf(&b, "%s %q %q; ", m.Role, m.Content, m.Extra)
	}
	fmt.Fprintf(&b, "extra %q", t.Extra)
	return b.String()
}

var onePassSeeds = []string{
	`"hi"`, ` "a b" `, `"caf\u00e9 \"q\" \\ 🌮"`, `" "`, `""`, `null`, `5`, `{}`, `[]`, `[`,
	`[{"type":"text","text":"ok"}]`,
	"[ {\"type\" : \"text\", \"text\": \"spaced\"} ]",
	`[{"type":"tool_use","id":"a","name":"t","input":{}}]`,
	`[{"type":"tool\u005fuse","id":"a","name":"t","input":{}}]`,
	`[{"type":"text","text":"x"},{"type":"tool_use","id":"b","name":"t","input":{"q":[1]}}]`,
	`[{"type":"tool_result","tool_use_id":"a","content":"r"}]`,
	`[{"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"r"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}],"is_error":true}]`,
	`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"text","text":"?"}]`,
	`[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"AA"}}]`,
	`[{"type":"image","source":"x"}]`, `[{"type":"im\u0061ge","source":1}]`,
	`[{"type":"server_tool_use","id":"s","name":"web_search","input":{}},{"type":"web_search_tool_result","tool_use_id":"s","content":[]}]`,
	`[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":5}]`,
	`[{"t\u0079pe":"text","text":"x"},{"Type":"text","TEXT":"y","type":"text","text":"z"}]`,
	"\"a\xffb\"", "[{\"type\":\"text\",\"text\":\"\xff\"}]", "\"a\x01\"",
}

// FuzzPrepareTurn: Memory.Save's one pass and the separate steps it
// replaced agree on every turn of up to four messages.
func FuzzPrepareTurn(f *testing.F) {
	for i, c := range onePassSeeds {
		f.Add(uint8(i), c, onePassSeeds[(i+7)%len(onePassSeeds)], onePassSeeds[(i+13)%len(onePassSeeds)], `"x"`, "")
		f.Add(uint8(i*5+3), `"go"`, c, `[{"type":"tool_result","tool_use_id":"a","content":"r"}]`, c, ` { "n" : 1 } `)
	}
	f.Fuzz(func(t *testing.T, shape uint8, c0, c1, c2, c3, extra string) {
		contents := []string{c0, c1, c2, c3}
		var turn Turn
		for i := range 1 + int(shape%4) {
			role := RoleUser
			if shape&(4<<i) != 0 {
				role = RoleAssistant
			}
			if i == 3 && shape&0x40 != 0 {
				role = "system"
			}
			turn.Messages = append(turn.Messages, Message{Role: role, Content: json.RawMessage(contents[i])})
		}
		if extra != "" {
			turn.Messages[0].Extra = map[string]json.RawMessage{"x": json.RawMessage(extra), "role": json.RawMessage(`1`)}
			if shape&0x80 != 0 {
				turn.Extra = map[string]json.RawMessage{"usage": json.RawMessage(extra), "messages": nil}
			}
		}
		checkOnePass(t, turn)
	})
}
