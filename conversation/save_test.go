package conversation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mombot/mombot/conversation"
	"github.com/mombot/mombot/conversation/memstore"
)

var update = flag.Bool("update", false, "rewrite testdata/save.golden from what Memory.Save hands the store now")

// recorder is a store that keeps the last turn of each conversation it is
// given, as stored, and its tool_use ids.
type recorder struct {
	conversation.Store
	data  []byte
	ids   []string
	calls int
}

func (r *recorder) Put(ctx context.Context, kind conversation.Kind, rec conversation.Record, keep time.Duration) (int64, error) {
	r.calls++
	var c struct{ Turns []json.RawMessage }
	if err := json.Unmarshal(rec.Data, &c); err != nil || len(c.Turns) == 0 {
		return 0, fmt.Errorf("recorder: a conversation without turns: %v", err)
	}
	r.data = c.Turns[len(c.Turns)-1]
	var t conversation.Turn
	if err := json.Unmarshal(r.data, &t); err != nil {
		return 0, err
	}
	r.ids = t.ToolUseIDs()
	return r.Store.Put(ctx, kind, rec, keep)
}

// saveCases are turns of every kind Memory.Save meets, good and bad: text,
// escapes, white space to compact, images and documents (base64 and not,
// inside tool results too), client and server tool rounds, thinking,
// search results, extra keys, keys written with escapes, and the inputs
// that each rule refuses.
func saveCases() []struct {
	name string
	turn conversation.Turn
} {
	m := func(role, content string) conversation.Message { return msg(role, content) }
	ex := func(kv ...string) map[string]json.RawMessage {
		out := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = json.RawMessage(kv[i+1])
		}
		return out
	}
	use := func(id string) conversation.Message {
		return m("assistant", `[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"`+id+`","name":"search","input":{"q":"x"}}]`)
	}
	result := func(id, content string) conversation.Message {
		return m("user", `[{"type":"tool_result","tool_use_id":"`+id+`","content":`+content+`}]`)
	}
	const png = `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
	const pdf = `{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="},"title":"t"}`
	var listing strings.Builder
	for r := range 8 {
		fmt.Fprintf(&listing, "%d. Lemon herb chicken, variation %d (%d min). Rating 4.%d. https://recipes.example.com/r/%06d\n", r+1, r, 25+r, r, r*37)
	}
	long := string(conversation.UserText(listing.String()).Content)
	type tc = struct {
		name string
		turn conversation.Turn
	}
	t := func(name string, msgs ...conversation.Message) tc {
		return tc{name, conversation.Turn{Messages: msgs}}
	}
	cases := []tc{
		t("text", conversation.UserText("hi"), m("assistant", `"hello"`)),
		t("text escapes", m("user", `"caf\u00e9 <b>&</b> \"q\" \\ \ud83c\udf2e 🌮\n\ttab"`), m("assistant", `[{"type":"text","text":"a \"b\" ]} \u2028"}]`)),
		t("text white space", m("user", " \n\t\"hi\" \n"), m("assistant", "[ {\n  \"type\" : \"text\",\n  \"text\" : \"a  b\"\n} ]")),
		t("text blocks with citations", conversation.UserText("q"), m("assistant", `[{"type":"text","text":"It is.","citations":[{"type":"web_search_result_location","url":"https://a.example","title":"A","cited_text":"x","encrypted_index":"e"}]}]`)),
		t("image base64", m("user", `[`+png+`,{"type":"text","text":"what is this?"}]`), m("assistant", `"a cat"`)),
		t("image url", m("user", `[{"type":"image","source":{"type":"url","url":"https://a.example/c.png"}},{"type":"text","text":"and this?"}]`), m("assistant", `"a dog"`)),
		t("image file id", m("user", `[{"type":"image","source":{"type":"file","file_id":"file_1"}},{"type":"text","text":"?"}]`), m("assistant", `"ok"`)),
		t("document base64", m("user", `[`+pdf+`,{"type":"text","text":"summarise"}]`), m("assistant", `"done"`)),
		t("document base64 without media type", m("user", `[{"type":"document","source":{"type":"base64","data":"AA=="}},{"type":"text","text":"?"}]`), m("assistant", `"ok"`)),
		t("document url", m("user", `[{"type":"document","source":{"type":"url","url":"https://a.example/d.pdf"}},{"type":"text","text":"?"}]`), m("assistant", `"ok"`)),
		t("document text source", m("user", `[{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain"}},{"type":"text","text":"?"}]`), m("assistant", `"ok"`)),
		t("image mentioned in text only", m("user", `[{"type":"text","text":"an \"image\" and a \"document\""}]`), m("assistant", `"ok"`)),
		t("image white space", m("user", "[ {\"type\": \"image\", \"source\": {\"type\": \"base64\", \"media_type\": \"image/jpeg\", \"data\": \"/9j/\"}} ,\n{\"type\":\"text\",\"text\":\"x\"}]"), m("assistant", `"ok"`)),
		t("tool round", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `"r"`), m("assistant", `"done"`)),
		t("tool round long result", conversation.UserText("go"), use("toolu_01"), result("toolu_01", long), m("assistant", `[{"type":"text","text":"Here."}]`)),
		t("tool result blocks", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[{"type":"text","text":"r"},`+png+`]`), m("assistant", `"done"`)),
		t("tool result document", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[`+pdf+`]`), m("assistant", `"done"`)),
		t("tool result search results", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[{"type":"search_result","source":"https://a.example","title":"A","content":[{"type":"text","text":"x"}]}]`), m("assistant", `"done"`)),
		t("tool result error and text after", conversation.UserText("go"), use("toolu_1"), m("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"boom","is_error":true},{"type":"text","text":"more"}]`), m("assistant", `"sorry"`)),
		t("tool result null content", conversation.UserText("go"), use("toolu_1"), m("user", `[{"type":"tool_result","tool_use_id":"toolu_1"}]`), m("assistant", `"ok"`)),
		t("parallel tools", conversation.UserText("go"),
			m("assistant", `[{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"b","name":"t","input":{"k":[1,2]}}]`),
			m("user", `[{"type":"tool_result","tool_use_id":"b","content":"2"},{"type":"tool_result","tool_use_id":"a","content":"1"}]`),
			m("assistant", `[{"type":"tool_use","id":"c","name":"t","input":{}}]`),
			result("c", `"3"`), m("assistant", `"done"`)),
		t("ends on tool results", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `"r"`)),
		t("server tool", conversation.UserText("news?"), m("assistant", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"news"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://a.example","title":"A","encrypted_content":"e"}]},{"type":"text","text":"Here."}]`)),
		t("server tool beside client tool", conversation.UserText("go"),
			m("assistant", `[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]`),
			result("toolu_1", `"r"`),
			m("assistant", `[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"done"}]`)),
		t("mcp tool", conversation.UserText("go"), m("assistant", `[{"type":"mcp_tool_use","id":"mcptoolu_1","name":"x","server_name":"s","input":{}},{"type":"mcp_tool_result","tool_use_id":"mcptoolu_1","is_error":false,"content":[{"type":"text","text":"r"}]},{"type":"text","text":"ok"}]`)),
		t("thinking", conversation.UserText("go"), m("assistant", `[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"d"},{"type":"text","text":"ok"}]`)),
		t("escaped keys", conversation.UserText("go"), m("assistant", `[{"t\u0079pe":"text","text":"ok"},{"type":"text","te\u0078t":"ok"}]`)),
		t("escaped tool_use type", conversation.UserText("go"), m("assistant", `[{"type":"tool\u005fuse","id":"toolu_e","name":"t","input":{}}]`), result("toolu_e", `"r"`)),
		t("escaped ids", conversation.UserText("go"), m("assistant", `[{"type":"tool_use","id":"toolu_\u00e9\"1","name":"t\n","input":{}}]`), result(`toolu_\u00e9\"1`, `"r"`)),
		t("duplicate keys", conversation.UserText("go"), m("assistant", `[{"type":"image","type":"text","text":"x","text":"ok"}]`)),
		t("unknown fields kept", conversation.UserText("go"), m("assistant", `[{"type":"text","text":"ok","cache_control":{"type":"ephemeral"},"zz":[1,{"a":null},-0.5e+10]}]`)),
		{"turn and message extra keys", conversation.Turn{
			Messages: []conversation.Message{
				{Role: "user", Content: json.RawMessage(`"hi"`), Extra: ex("sent_at", ` "2026-02-24T10:00:00Z" `, "role", `"x"`, "content", `1`, "z\"q", "[ 1 , 2 ]")},
				{Role: "assistant", Content: json.RawMessage(`"hello"`), Extra: ex("b", `{ "a" : true }`, "a", `null`)},
			},
			Extra: ex("usage", "{\n \"input_tokens\": 12,\n \"output_tokens\": 3\n}", "messages", `[]`, "model", `"claude"`, "<&>", `"<&>"`),
		}},
		{"empty extra maps", conversation.Turn{Messages: []conversation.Message{{Role: "user", Content: json.RawMessage(`"hi"`), Extra: ex()}}, Extra: ex()}},
		// What each rule refuses.
		t("empty turn"),
		t("first message from the assistant", m("assistant", `"hi"`)),
		t("first message answers a call", result("toolu_1", `"r"`)),
		t("bad role", conversation.UserText("go"), m("system", `"x"`)),
		t("content not JSON", m("user", `"hi`)),
		t("content not JSON later", conversation.UserText("go"), m("assistant", `[{"type":"text","text":"ok"}`)),
		t("sanitise error after a rule broken earlier", m("assistant", `"x"`), m("user", `[`+png+`,{"type":"image","source":"oops"}]`)),
		t("content not JSON after a rule broken earlier", m("assistant", `"x"`), m("user", `{`)),
		t("content empty", m("user", ``)),
		t("content null", m("user", `null`)),
		t("content object", m("user", `{"type":"text","text":"x"}`)),
		t("content number", m("user", `12`)),
		t("content empty array", m("user", `[]`)),
		t("content empty string", m("user", `""`)),
		t("content white space", m("user", `" \n\t "`)),
		t("block not an object", m("user", `["x"]`)),
		t("block without type", m("user", `[{"text":"x"}]`)),
		t("block type empty", m("user", `[{"type":"","text":"x"}]`)),
		t("block type not a string", m("user", `[{"type":1,"text":"x"}]`)),
		t("block type named in capitals", m("user", `[{"Type":"text","text":"x"}]`)),
		t("text named in capitals", m("user", `[{"type":"text","Text":"x"}]`)),
		t("text empty", m("user", `[{"type":"text","text":""}]`)),
		t("text missing", m("user", `[{"type":"text"}]`)),
		t("text not a string", m("user", `[{"type":"text","text":5}]`)),
		t("image source a string", m("user", `[{"type":"image","source":"x"},{"type":"text","text":"?"}]`)),
		t("image source a string, no image in bytes", m("user", `[{"type":"im\u0061ge","source":"x"},{"type":"text","text":"?"}]`)),
		t("tool result image source a string", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[{"type":"image","source":1}]`)),
		t("invalid UTF-8", m("user", "\"a\xffb\"")),
		t("invalid UTF-8 in a block", m("user", "[{\"type\":\"text\",\"text\":\"a\xffb\"}]")),
		t("control character", m("user", "\"a\x01b\"")),
		t("tool_use from the user", m("user", `[{"type":"tool_use","id":"a","name":"t","input":{}}]`)),
		t("tool_use without name", conversation.UserText("go"), m("assistant", `[{"type":"tool_use","id":"a","input":{}}]`)),
		t("tool_use input not an object", conversation.UserText("go"), m("assistant", `[{"type":"tool_use","id":"a","name":"t","input":[]}]`)),
		t("tool_use id not a string", conversation.UserText("go"), m("assistant", `[{"type":"tool_use","id":1,"name":"t","input":{}}]`)),
		t("duplicate tool ids", conversation.UserText("go"), m("assistant", `[{"type":"tool_use","id":"a","name":"t","input":{}},{"type":"tool_use","id":"a","name":"t","input":{}}]`)),
		t("unanswered call", conversation.UserText("go"), use("toolu_1")),
		t("missing result", conversation.UserText("go"), use("toolu_1"), m("user", `"no"`)),
		t("orphan result", conversation.UserText("go"), use("toolu_1"), result("toolu_2", `"r"`)),
		t("result after text", conversation.UserText("go"), use("toolu_1"), m("user", `[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]`)),
		t("result in the assistant's message", conversation.UserText("go"), m("assistant", `[{"type":"tool_result","tool_use_id":"a","content":"r"}]`)),
		t("result content a number", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `5`)),
		t("tool_use inside a result", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[{"type":"tool_use","id":"x","name":"t","input":{}}]`)),
		t("empty text inside a result", conversation.UserText("go"), use("toolu_1"), result("toolu_1", `[{"type":"text","text":" "}]`)),
		t("is_error not a bool", conversation.UserText("go"), use("toolu_1"), m("user", `[{"type":"tool_result","tool_use_id":"toolu_1","content":"r","is_error":"yes"}]`)),
		t("server call unanswered", conversation.UserText("go"), m("assistant", `[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}},{"type":"text","text":"x"}]`)),
		t("server result answers nothing", conversation.UserText("go"), m("assistant", `[{"type":"web_search_tool_result","tool_use_id":"s9","content":[]}]`)),
		t("server call from the user", m("user", `[{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}]`)),
		t("server call without id", conversation.UserText("go"), m("assistant", `[{"type":"server_tool_use","name":"web_search","input":{}}]`)),
		{"message extra not JSON", conversation.Turn{Messages: []conversation.Message{{Role: "user", Content: json.RawMessage(`"hi"`), Extra: ex("x", `{`)}}}},
		{"turn extra not JSON", conversation.Turn{Messages: []conversation.Message{conversation.UserText("hi")}, Extra: ex("usage", `nope`)}},
		{"turn extra not JSON and a bad message", conversation.Turn{Messages: []conversation.Message{m("user", `{`)}, Extra: ex("usage", `nope`)}},
	}
	return cases
}

// TestSaveGolden holds what Memory.Save hands every store (the bytes
// Turn.MarshalJSON gives, their checksum, the tool_use ids) and the errors
// it returns, for saveCases, to testdata/save.golden: what was stored
// before must be stored byte for byte the same, and a bad turn must get the
// same error and reach no store.
func TestSaveGolden(t *testing.T) {
	var out bytes.Buffer
	for _, c := range saveCases() {
		rec := &recorder{Store: memstore.New()}
		mem, err := conversation.New(rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = mem.Save(ctx, "+1", c.turn)
		fmt.Fprintf(&out, "== %s\n", c.name)
		if err != nil {
			if !errors.Is(err, conversation.ErrInvalidTurn) {
				t.Errorf("%s: err = %v, want ErrInvalidTurn", c.name, err)
			}
			if rec.calls != 0 {
				t.Errorf("%s: refused, yet the store was asked to append", c.name)
			}
			if _, lerr := rec.Store.Get(ctx, conversation.Conversations, "+1"); !errors.Is(lerr, conversation.ErrNotFound) {
				t.Errorf("%s: refused, yet something was stored (%v)", c.name, lerr)
			}
			fmt.Fprintf(&out, "error %s\n", strconv.Quote(err.Error()))
			continue
		}
		if rec.calls != 1 {
			t.Fatalf("%s: %d appends, want 1", c.name, rec.calls)
		}
		fmt.Fprintf(&out, "stored %s\nids %q\ncrc %08x\n", strconv.Quote(string(rec.data)), rec.ids, crc32.Checksum(rec.data, crc32.MakeTable(crc32.Castagnoli)))
		// What was stored loads back as the messages it was made of.
		got, err := mem.Load(ctx, "+1")
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := got.Turns[0].MarshalJSON(); !bytes.Equal(again, rec.data) {
			t.Errorf("%s: the loaded turn encodes to\n%s\nwant\n%s", c.name, again, rec.data)
		}
	}
	path := filepath.Join("testdata", "save.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestSaveGolden -update writes it)", err)
	}
	gotLines, wantLines := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("%s line %d:\ngot  %s\nwant %s", path, i+1, g, w)
		}
	}
}

// benchToolTurn is storebench's turn: about 3 kB as stored, a user text,
// an assistant text and tool_use, its tool_result (the bulk of it) and the
// final text reply.
func benchToolTurn(i int) []conversation.Message {
	id := fmt.Sprintf("toolu_01%022d", i)
	var listing strings.Builder
	for r := range 8 {
		fmt.Fprintf(&listing, "%d. Lemon herb chicken thighs with spinach and feta, variation %d (%d min, serves 4). "+
			"Ingredients: chicken thighs, lemon, garlic, olive oil, baby spinach, feta, oregano, salt, pepper. "+
			"Rating 4.%d from %d reviews. https://recipes.example.com/r/%06d\n", r+1, r, 25+r, r, 100+r*37, i*10+r)
	}
	content := conversation.UserText(listing.String()).Content
	return []conversation.Message{
		conversation.UserText(fmt.Sprintf("[Mon 24 Feb 10:%02d] [From Erin]: we have chicken thighs, a lemon, half a bag of spinach and some feta; "+
			"find me a dinner recipe for four that takes under 40 minutes, nothing spicy, and tell me what else to buy", i%60)),
		conversation.NewMessage(conversation.RoleAssistant,
			conversation.TextBlock("Let me look for recipes with what you have."),
			[]byte(fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"search_recipes","input":{"query":"chicken thighs lemon spinach feta","max_minutes":40,"servings":4,"exclude":["spicy"]}}`, id))),
		conversation.NewMessage(conversation.RoleUser,
			[]byte(fmt.Sprintf(`{"type":"tool_result","tool_use_id":%q,"content":%s}`, id, content))),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Here are two that fit what you have:\n1. Lemon herb chicken thighs with spinach and feta: 35 minutes, "+
			"one pan. You need garlic and oregano.\n2. Greek chicken skillet: 30 minutes. You need garlic, oregano and "+
			"a red onion.\nShall I add garlic, oregano and a red onion to the grocery list?")),
	}
}

// BenchmarkSave measures the part of a save every store shares: Memory.Save
// reading the conversation, sanitising and validating the turn, applying the
// policy and encoding the record, on the in-memory store.
func BenchmarkSave(b *testing.B) {
	text := []conversation.Message{conversation.UserText("what's for dinner tonight?"),
		conversation.NewMessage(conversation.RoleAssistant, conversation.TextBlock("Lemon chicken with spinach and feta: 35 minutes, one pan."))}
	for _, c := range []struct {
		name string
		turn func(i int) []conversation.Message
	}{
		{"turn=tool", benchToolTurn},
		{"turn=text", func(int) []conversation.Message { return text }},
	} {
		b.Run(c.name, func(b *testing.B) {
			mem, err := conversation.New(memstore.New(), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := mem.SaveTurn(ctx, "+1", c.turn(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
