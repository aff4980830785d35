package conversation_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/mombot/mombot/conversation"
)

// blockContents are contents whose blocks have members of other JSON types
// than the rules read them as, on block types that define those members
// and on types that do not, repeated members and null ones.
var blockContents = []string{
	`[{"type":"text","text":"hi"},{"type":"tool_use","id":"a","name":"t","input":{}}]`,
	`[{"type":"tool_result","tool_use_id":"a","content":"r","is_error":true}]`,
	`[{"type":"search_result","source":"https://example.com/a","text":5,"id":{},"name":[],"is_error":"no"}]`,
	`[{"type":"text","text":5}]`,
	`[{"type":"tool_use","id":7,"name":"t","input":{}}]`,
	`[{"type":"tool_result","tool_use_id":"a","is_error":"yes"}]`,
	`[{"type":"text","text":"a","text":null}]`,
	`[{"type":"text","text":null,"text":"a"}]`,
	`[{"type":"text","text":5,"text":"a"}]`,
	`[{"type":"tool_use","id":"a","id":null,"name":"t","input":{}}]`,
	`[{"type":"tool_result","tool_use_id":"a","is_error":true,"is_error":null}]`,
	`[{"type":"text","TEXT":"upper"}]`,
	`[{"text":"no type"}]`,
	`[{"type":null,"text":"null type"}]`,
	`[{"type":5}]`,
	`[null]`,
	`[1]`,
	`[{"type":"image","source":"https://example.com/a.png"}]`,
	`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]`,
	`[{"type":"document","source":null}]`,
	`[{"type":"text","text":"\u00e9\ud800"}]`,
}

// TestCheckedBlocksAreBlocks checks that the blocks validation reads are
// those Blocks returns, but for Raw, and that it fails where and as Blocks
// fails.
func TestCheckedBlocksAreBlocks(t *testing.T) {
	for _, c := range blockContents {
		t.Run(c, func(t *testing.T) { checkBlocksAgree(t, c) })
	}
}

func FuzzCheckedBlocks(f *testing.F) {
	for _, c := range blockContents {
		f.Add(c)
	}
	f.Fuzz(checkBlocksAgree)
}

func checkBlocksAgree(t *testing.T, content string) {
	t.Helper()
	m := msg("user", content)
	want, wantErr := m.Blocks()
	got, err := conversation.CheckedBlocks(m)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("checked blocks: %v; Blocks: %v", err, wantErr)
	}
	if err != nil {
		return
	}
	for i := range want {
		want[i].Raw = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("checked blocks\n%+v\nBlocks\n%+v", got, want)
	}
}
