package anthropictest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Version is the anthropic-version header value the fake accepts.
const Version = "2023-06-01"

// MaxImageBase64 is the API's limit on one base64 image: 5 MB of base64 text.
const MaxImageBase64 = 5 * 1024 * 1024

// MaxCacheBreakpoints is the API's limit on cache_control markers per request.
const MaxCacheBreakpoints = 4

type apiError struct {
	status  int
	errType string
	message string
}

func invalid(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(format, args...)}
}

// checkHTTP checks the method, the path and the headers.
func checkHTTP(r *http.Request, key string) *apiError {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return &apiError{http.StatusNotFound, "not_found_error", "Not found"}
	}
	switch got := r.Header.Get("X-Api-Key"); {
	case got == "":
		return &apiError{http.StatusUnauthorized, "authentication_error", "x-api-key header is required"}
	case got != key:
		return &apiError{http.StatusUnauthorized, "authentication_error", "invalid x-api-key"}
	}
	switch v := r.Header.Get("Anthropic-Version"); {
	case v == "":
		return invalid("anthropic-version: header is required")
	case v != Version:
		return invalid("anthropic-version: %q is not a valid version", v)
	}
	return nil
}

var knownFields = []string{
	"model", "max_tokens", "messages", "system", "tools", "tool_choice",
	"temperature", "top_k", "top_p", "stop_sequences", "stream", "metadata",
	"thinking", "cache_control", "service_tier", "container", "mcp_servers",
	"output_config", "context_management", "inference_geo", "speed",
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkBody checks a Messages request body against the API's rules, in
// the order the API reports them: fields, system, tools, messages.
func checkBody(body []byte) *apiError {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return invalid("There was an issue with the formatting of your request: the body is not a JSON object (%v)", err)
	}
	for k := range top {
		if !slices.Contains(knownFields, k) {
			return invalid("%s: Extra inputs are not permitted", k)
		}
	}
	if _, ok := top["model"]; !ok {
		return invalid("model: Field required")
	}
	raw, ok := top["max_tokens"]
	if !ok {
		return invalid("max_tokens: Field required")
	}
	var maxTokens int
	if json.Unmarshal(raw, &maxTokens) != nil {
		return invalid("max_tokens: Input should be a valid integer")
	}
	if maxTokens < 1 {
		return invalid("max_tokens: Input should be greater than or equal to 1")
	}
	if s, ok := top["stream"]; ok && string(s) == "true" {
		return invalid("anthropictest: streaming is not faked")
	}
	raw, ok = top["messages"]
	if !ok {
		return invalid("messages: Field required")
	}
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil {
		return invalid("messages: Input should be a valid list")
	}

	c := &checker{}
	if cc, ok := top["cache_control"]; ok && string(cc) != "null" {
		c.breakpoints++
	}
	if sys, ok := top["system"]; ok {
		if e := c.system(sys); e != nil {
			return e
		}
	}
	if tools, ok := top["tools"]; ok {
		if e := c.tools(tools); e != nil {
			return e
		}
	}
	if e := c.messages(msgs); e != nil {
		return e
	}
	if c.breakpoints > MaxCacheBreakpoints {
		return invalid("A maximum of %d blocks with cache_control may be provided. Found %d.", MaxCacheBreakpoints, c.breakpoints)
	}
	if c.usesTools && c.numTools == 0 {
		return invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	return nil
}

type checker struct {
	breakpoints int
	numTools    int
	usesTools   bool
	toolIDs     map[string]bool
}

type block struct {
	Type         *string         `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Source       *source         `json:"source"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type source struct {
	Type      string  `json:"type"`
	MediaType string  `json:"media_type"`
	Data      *string `json:"data"`
}

func (c *checker) countCache(b block) {
	if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
		c.breakpoints++
	}
}

func blank(s string) bool { return strings.TrimFunc(s, unicode.IsSpace) == "" }

func (c *checker) system(raw json.RawMessage) *apiError {
	if len(raw) > 0 && raw[0] == '"' {
		return nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return invalid("system: Input should be a valid string or list of text blocks")
	}
	for i, b := range blocks {
		if b.Type == nil || *b.Type != "text" {
			return invalid("system.%d.type: Input should be 'text'", i)
		}
		if b.Text == nil || *b.Text == "" {
			return invalid("system: text content blocks must be non-empty")
		}
		c.countCache(b)
	}
	return nil
}

func (c *checker) tools(raw json.RawMessage) *apiError {
	var tools []struct {
		Type         string          `json:"type"`
		Name         *string         `json:"name"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(raw, &tools) != nil {
		return invalid("tools: Input should be a valid list")
	}
	seen := map[string]bool{}
	for i, t := range tools {
		if t.Type != "" && t.Type != "custom" {
			continue // server tools have their own schemas
		}
		if t.Name == nil {
			return invalid("tools.%d.custom.name: Field required", i)
		}
		if !toolName.MatchString(*t.Name) {
			return invalid("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if seen[*t.Name] {
			return invalid("tools: Tool names must be unique.")
		}
		seen[*t.Name] = true
		var schema map[string]json.RawMessage
		if len(t.InputSchema) == 0 {
			return invalid("tools.%d.custom.input_schema: Field required", i)
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil {
			return invalid("tools.%d.custom.input_schema: Input should be a valid dictionary", i)
		}
		if typ, ok := schema["type"]; !ok || string(typ) != `"object"` {
			return invalid("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
		c.countCache(block{CacheControl: t.CacheControl})
	}
	c.numTools = len(tools)
	return nil
}

var userTypes = []string{"text", "image", "document", "tool_result", "search_result"}

var assistantTypes = []string{
	"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
	"web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
	"bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
	"mcp_tool_use", "mcp_tool_result", "container_upload",
}

func (c *checker) messages(msgs []json.RawMessage) *apiError {
	if len(msgs) == 0 {
		return invalid("messages: at least one message is required")
	}
	c.toolIDs = map[string]bool{}
	var pending []string // tool_use ids of the previous message
	for i, raw := range msgs {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return invalid("messages.%d: Input should be a valid dictionary", i)
		}
		for k := range m {
			if k != "role" && k != "content" {
				return invalid("messages.%d.%s: Extra inputs are not permitted", i, k)
			}
		}
		var role string
		if r, ok := m["role"]; !ok {
			return invalid("messages.%d.role: Field required", i)
		} else if json.Unmarshal(r, &role) != nil || (role != "user" && role != "assistant") {
			return invalid("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && role != "user" {
			return invalid(`messages: first message must use the "user" role`)
		}
		content, ok := m["content"]
		if !ok {
			return invalid("messages.%d.content: Field required", i)
		}
		finalAssistant := i == len(msgs)-1 && role == "assistant"
		blocks, e := c.content(i, role, content, finalAssistant)
		if e != nil {
			return e
		}

		// The tool_use ids of the previous message must all be answered
		// by tool_result blocks that open this message.
		var results, uses []string
		leading := true
		for j, b := range blocks {
			switch *b.Type {
			case "tool_result":
				if !slices.Contains(pending, b.ToolUseID) || slices.Contains(results, b.ToolUseID) {
					return invalid("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				if leading {
					results = append(results, b.ToolUseID)
				}
			case "tool_use":
				uses = append(uses, b.ID)
			}
			if *b.Type != "tool_result" {
				leading = false
			}
		}
		if e := unanswered(i-1, pending, results); e != nil {
			return e
		}
		pending = uses
	}
	return unanswered(len(msgs)-1, pending, nil)
}

func unanswered(at int, pending, results []string) *apiError {
	var missing []string
	for _, id := range pending {
		if !slices.Contains(results, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return invalid("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", at, strings.Join(missing, ", "))
}

func (c *checker) content(i int, role string, raw json.RawMessage, finalAssistant bool) ([]block, *apiError) {
	empty := invalid("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, invalid("messages.%d.content: Input should be a valid string", i)
		}
		switch {
		case s == "" && finalAssistant:
			return nil, nil
		case s == "":
			return nil, empty
		case blank(s):
			return nil, invalid("messages: text content blocks must contain non-whitespace text")
		}
		return nil, nil
	}
	var blocks []block
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, invalid("messages.%d.content: Input should be a valid list", i)
	}
	if len(blocks) == 0 && !finalAssistant {
		return nil, empty
	}
	allowed := userTypes
	if role == "assistant" {
		allowed = assistantTypes
	}
	for j, b := range blocks {
		at := fmt.Sprintf("messages.%d.content.%d", i, j)
		if b.Type == nil {
			return nil, invalid("%s.type: Field required", at)
		}
		if !slices.Contains(allowed, *b.Type) {
			return nil, invalid("%s.type: Input tag '%s' found using 'type' does not match any of the expected tags: %s", at, *b.Type, quoteList(allowed))
		}
		c.countCache(b)
		if e := c.block(at, b); e != nil {
			return nil, e
		}
	}
	return blocks, nil
}

func (c *checker) block(at string, b block) *apiError {
	switch *b.Type {
	case "text":
		if b.Text == nil {
			return invalid("%s.text.text: Field required", at)
		}
		if *b.Text == "" {
			return invalid("messages: text content blocks must be non-empty")
		}
		if blank(*b.Text) {
			return invalid("messages: text content blocks must contain non-whitespace text")
		}
	case "image":
		return image(at, b)
	case "document":
		return document(at, b) // document.go
	case "tool_use":
		c.usesTools = true
		if b.ID == "" {
			return invalid("%s.tool_use.id: Field required", at)
		}
		if b.Name == "" {
			return invalid("%s.tool_use.name: Field required", at)
		}
		if b.Input == nil {
			return invalid("%s.tool_use.input: Field required", at)
		}
		var in map[string]json.RawMessage
		if json.Unmarshal(b.Input, &in) != nil || in == nil {
			return invalid("%s.tool_use.input: Input should be a valid dictionary", at)
		}
		if c.toolIDs[b.ID] {
			return invalid("%s: `tool_use` ids must be unique", at)
		}
		c.toolIDs[b.ID] = true
	case "tool_result":
		c.usesTools = true
		if b.ToolUseID == "" {
			return invalid("%s.tool_result.tool_use_id: Field required", at)
		}
		if len(b.Content) > 0 && b.Content[0] == '[' {
			var inner []block
			if json.Unmarshal(b.Content, &inner) != nil {
				return invalid("%s.tool_result.content: Input should be a valid list", at)
			}
			for k, ib := range inner {
				iat := fmt.Sprintf("%s.tool_result.content.%d", at, k)
				if ib.Type == nil || !slices.Contains([]string{"text", "image", "document", "search_result"}, *ib.Type) {
					return invalid("%s.type: Input should be 'text', 'image', 'document' or 'search_result'", iat)
				}
				c.countCache(ib)
				if e := c.block(iat, ib); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

func image(at string, b block) *apiError {
	if b.Source == nil {
		return invalid("%s.image.source: Field required", at)
	}
	if b.Source.Type != "base64" {
		return nil
	}
	if !slices.Contains(imageTypes, b.Source.MediaType) {
		return invalid("%s.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", at)
	}
	if b.Source.Data == nil {
		return invalid("%s.image.source.base64.data: Field required", at)
	}
	if n := len(*b.Source.Data); n > MaxImageBase64 {
		return invalid("%s.image.source.base64: image exceeds 5 MB maximum: %d bytes > %d bytes", at, n, MaxImageBase64)
	}
	return nil
}

func quoteList(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + x + "'")
	}
	return b.String()
}
